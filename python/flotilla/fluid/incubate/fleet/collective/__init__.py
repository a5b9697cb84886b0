"""Paddle 1.x collective fleet (``fluid.incubate.fleet.collective``):

    from flotilla.fluid.incubate.fleet.collective import fleet, DistributedStrategy
    from flotilla.fluid.incubate.fleet.base import role_maker
    fleet.init(role_maker.PaddleCloudRoleMaker(is_collective=True))
    optimizer = fleet.distributed_optimizer(optimizer, strategy=DistributedStrategy())
    optimizer.minimize(cost, fluid.default_startup_program())
    exe.run(fleet.main_program, ...)
"""

from .....distributed.fleet.compat_strategies import CollectiveStrategy as DistributedStrategy  # noqa: F401
from .....distributed.fleet.fleet import DistributedOptimizer as CollectiveOptimizer  # noqa: F401
from .....distributed.fleet.fleet import Fleet

fleet = Fleet(mode="collective")
init = fleet.init
distributed_optimizer = fleet.distributed_optimizer

__all__ = ["fleet", "DistributedStrategy", "CollectiveOptimizer", "init", "distributed_optimizer"]
