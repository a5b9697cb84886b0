"""Paddle 1.x parameter-server fleet
(``fluid.incubate.fleet.parameter_server.distribute_transpiler``):

    from flotilla.fluid.incubate.fleet.parameter_server.distribute_transpiler import fleet
    fleet.init(role_maker.PaddleCloudRoleMaker())
    optimizer = fleet.distributed_optimizer(optimizer)   # Paddle's default: async
    optimizer.minimize(cost)
    if fleet.is_server():
        fleet.init_server(); fleet.run_server()
    elif fleet.is_worker():
        fleet.init_worker(); ...; fleet.stop_worker()
"""

from ......distributed.fleet.fleet import Fleet
from . import distributed_strategy  # noqa: F401
from .distributed_strategy import StrategyFactory  # noqa: F401

fleet = Fleet(mode="ps")

__all__ = ["fleet", "StrategyFactory", "distributed_strategy"]
