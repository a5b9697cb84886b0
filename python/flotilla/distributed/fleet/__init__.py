"""Fleet with Paddle 2.x names (``paddle.distributed.fleet``): one module
whose functions drive the process-wide fleet of the C++ core.

    import flotilla.distributed.fleet as fleet
    fleet.init(is_collective=True)
    strategy = fleet.DistributedStrategy()
    opt = fleet.distributed_optimizer(flotilla.optimizer.SGD(0.01), strategy)
    opt.minimize(loss)
"""

from .._alias_helpers import bind_module_functions as _bind
from . import base  # noqa: F401
from .base.role_maker import (MPISymetricRoleMaker, PaddleCloudRoleMaker, Role,  # noqa: F401
                              UserDefinedRoleMaker)
from .fleet import DistributedOptimizer, Fleet  # noqa: F401
from .strategy import DistributedStrategy  # noqa: F401
from .base.util_factory import UtilBase, set_util  # noqa: F401
from . import data_generator  # noqa: F401
from .data_generator import MultiSlotDataGenerator, MultiSlotStringDataGenerator  # noqa: F401
from . import dataset  # noqa: F401
from .dataset import DatasetBase, InMemoryDataset, QueueDataset  # noqa: F401

fleet = Fleet()
util = UtilBase()  # fleet.init gives it the role; set_util replaces it

_FUNCTIONS = ["init", "is_worker", "is_server", "is_first_worker", "worker_index", "worker_num", "server_num",
              "server_index", "worker_endpoints", "server_endpoints", "barrier_worker", "distributed_optimizer",
              "init_server", "run_server", "init_worker", "stop_worker", "prefetch_sparse", "save_persistables",
              "save_inference_model", "save", "load_model", "_get_applied_meta_list", "_get_applied_graph_list",
              "run_step", "fault_stats"]
_bind(globals(), fleet, _FUNCTIONS)
StepState = Fleet.StepState

__all__ = ["fleet", "Fleet", "DistributedOptimizer", "DistributedStrategy", "PaddleCloudRoleMaker",
           "UserDefinedRoleMaker", "MPISymetricRoleMaker", "Role", "base", "UtilBase", "util", "set_util",
           "data_generator", "MultiSlotDataGenerator", "MultiSlotStringDataGenerator",
           "dataset", "DatasetBase", "InMemoryDataset", "QueueDataset", "StepState"] + _FUNCTIONS
