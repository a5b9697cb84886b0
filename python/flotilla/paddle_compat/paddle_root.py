"""What ``import paddle`` gives under the compatibility switch: Paddle's
top-level names over Flotilla (``paddle.batch``, ``paddle.enable_static``,
``paddle.CPUPlace``, ``paddle.static``, ``paddle.reshape``, ...)."""

from .. import _core  # noqa: F401
from .. import dataset, distributed, fluid, io, metric, nn, optimizer, reader, regularizer, static  # noqa: F401
from ..fluid import core  # noqa: F401
from ..param_attr import ParamAttr  # noqa: F401
from ..place import CPUPlace, CUDAPlace, is_compiled_with_cuda  # noqa: F401
from ..reader import batch  # noqa: F401
from ..tensor import (add, cast, concat, divide, equal, full, greater_equal, greater_than,  # noqa: F401
                      less_equal, less_than, matmul, maximum, mean, minimum, multiply, not_equal, ones, reshape,
                      scale, subtract, sum, zeros)
from ..nn.common import flatten  # noqa: F401
from ..static.io import load_object as load, save_object as save  # noqa: F401
from . import common_ops_import, utils  # noqa: F401

__version__ = "2.0.0"  # the Paddle API level these scripts are served at


def enable_static() -> None:
    """Static-graph mode: the only mode Flotilla has, so this changes nothing."""


def in_dynamic_mode() -> bool:
    """False: Flotilla builds static programs."""
    return False


def disable_static(place=None) -> None:
    """Not in Flotilla: it runs static programs only."""
    raise NotImplementedError("paddle.disable_static (dygraph mode) is not in Flotilla; nearest Flotilla API: "
                              "static programs (paddle.enable_static(), paddle.static.*, Executor)")


def set_device(device: str) -> str:
    """Paddle's device choice: "cpu" runs on the CPU; "gpu[:i]" also runs on
    the CPU (Flotilla has no GPU backend yet), with one warning."""
    if device != "cpu":
        CUDAPlace(0)  # the one warning
    return "cpu"


def get_device() -> str:
    """"cpu"."""
    return "cpu"


def seed(value: int) -> None:
    """Seeds the default programs' initialisers (their random_seed)."""
    fluid.default_main_program().random_seed = int(value)
    fluid.default_startup_program().random_seed = int(value)

