"""Paddle 1.x parameter-server strategies (``StrategyFactory``)."""

from ......distributed.fleet.compat_strategies import (AsyncStrategy, GeoStrategy,  # noqa: F401
                                                       HalfAsyncStrategy, StrategyFactory, SyncStrategy)
from ......distributed.fleet.compat_strategies import _PsStrategy as DistributedStrategy  # noqa: F401

__all__ = ["StrategyFactory", "SyncStrategy", "AsyncStrategy", "HalfAsyncStrategy", "GeoStrategy",
           "DistributedStrategy"]
