"""Paddle 1.x strategies, mapped onto the one C++ strategy
(:class:`DistributedStrategy`):

- the collective ``DistributedStrategy`` of ``fluid.incubate.fleet.collective``
  (a BuildStrategy with ``nccl_comm_num``, ``exec_strategy``,
  ``use_local_sgd``, ``local_sgd_steps``, ``local_sgd_is_warm_steps``, ...);
- the parameter-server strategies of ``...parameter_server.distribute_transpiler``
  (``StrategyFactory.create_sync_strategy()`` / ``async`` / ``geo``) and a
  ``DistributeTranspilerConfig`` passed as the strategy.

Every field either maps onto a C++ field or, set to anything but its
default, raises NotImplementedError naming it.
"""

from typing import Any, Optional

from ...strategies import BuildStrategy, ExecutionStrategy
from ..transpiler import DistributeTranspilerConfig
from .strategy import DistributedStrategy


class CollectiveStrategy(BuildStrategy):
    """Paddle 1.x ``fluid.incubate.fleet.collective.DistributedStrategy``."""

    _defaults = dict(BuildStrategy._defaults, **{
        "use_local_sgd": False, "local_sgd_steps": 1, "local_sgd_is_warm_steps": 0, "use_dist_fc": False,
        "dist_fc_config": None, "mode": "nccl2", "collective_mode": None, "forward_recompute": False,
        "recompute_checkpoints": [], "use_amp": False, "amp_loss_scaling": 2**15,
        "user_defined_transpiler": None, "hierarchical_allreduce_inter_nranks": 0, "exec_strategy": None,
        "fuse_grad_size_in_MB": 32, "fuse_memory_size": -1, "fuse_layer_size": -1,
    })

    def __init__(self) -> None:
        super().__init__()
        self.exec_strategy = ExecutionStrategy()

    def _to_v2(self) -> DistributedStrategy:
        refused = {"use_dist_fc": False, "dist_fc_config": None, "user_defined_transpiler": None,
                   "fuse_layer_size": -1}
        for name, default in refused.items():
            if getattr(self, name) != default:
                raise NotImplementedError(f"DistributedStrategy.{name}={getattr(self, name)!r} (Paddle 1.x "
                                          "collective) is not in Flotilla")
        if self.collective_mode not in (None, "grad_allreduce", "local_sgd"):
            raise NotImplementedError(f"DistributedStrategy.collective_mode={self.collective_mode!r}")
        s = DistributedStrategy()
        s.a_sync = False
        s.build_strategy = self
        if self.fuse_memory_size > 0 or self.fuse_grad_size_in_MB != self._defaults["fuse_grad_size_in_MB"]:
            # Unset, FLAGS_fuse_parameter_memory_size may still size the buckets.
            s.fuse_grad_size_in_MB = int(self.fuse_memory_size if self.fuse_memory_size > 0 else
                                         self.fuse_grad_size_in_MB)
        # The 2.x strategy's own 1.x names: the same mapping (warm-up steps).
        s.use_local_sgd = bool(self.use_local_sgd or self.collective_mode == "local_sgd")
        s.local_sgd_steps = int(self.local_sgd_steps)
        s.local_sgd_is_warm_steps = int(self.local_sgd_is_warm_steps)
        # Options the C++ core refuses (amp) or reads as hints (recompute) when applied.
        s.amp = bool(self.use_amp)
        s.recompute = bool(self.forward_recompute)
        s.recompute_configs = {"checkpoints": [getattr(c, "name", c) for c in self.recompute_checkpoints]}
        if self.exec_strategy is not None:
            s.exec_strategy = self.exec_strategy
        return s


class _PsStrategy:
    """Base of Paddle 1.x's parameter-server strategies."""

    mode = "async"

    def __init__(self, k_steps: int = -1) -> None:
        self._k_steps = k_steps
        self._program_config = DistributeTranspilerConfig()

    def get_program_config(self) -> DistributeTranspilerConfig:
        """The transpiler config (Paddle API)."""
        return self._program_config

    def set_program_config(self, config: Any) -> None:
        """Copies the fields of a DistributeTranspilerConfig or dict."""
        items = config.items() if isinstance(config, dict) else vars(config).items()
        for key, value in items:
            setattr(self._program_config, key, value)

    def _to_v2(self) -> DistributedStrategy:
        s = DistributedStrategy()
        s.a_sync = self.mode != "sync"
        if self.mode == "geo":
            s.a_sync_configs = {"k_steps": int(self._k_steps)}
        return s


class SyncStrategy(_PsStrategy):
    """Servers apply the average of every trainer's gradients once per step."""

    mode = "sync"


class AsyncStrategy(_PsStrategy):
    """Each push is applied at once."""

    mode = "async"


class HalfAsyncStrategy(_PsStrategy):
    """Paddle's half-async: pushes merged per step, applied without waiting —
    Flotilla's async mode with a merging communicator."""

    mode = "async"


class GeoStrategy(_PsStrategy):
    """Trainers optimise locally and push parameter deltas every k steps."""

    mode = "geo"

    def __init__(self, update_frequency: int = 100) -> None:
        super().__init__(update_frequency)


class StrategyFactory:
    """Paddle 1.x ``StrategyFactory``."""

    @staticmethod
    def create_sync_strategy() -> SyncStrategy:
        return SyncStrategy()

    @staticmethod
    def create_async_strategy() -> AsyncStrategy:
        return AsyncStrategy()

    @staticmethod
    def create_half_async_strategy() -> HalfAsyncStrategy:
        return HalfAsyncStrategy()

    @staticmethod
    def create_geo_strategy(update_frequency: int = 100) -> GeoStrategy:
        return GeoStrategy(update_frequency)


def _from_transpiler_config(config: DistributeTranspilerConfig) -> DistributedStrategy:
    config._to_core(config.sync_mode)  # refuses what Flotilla does not implement, by name
    s = DistributedStrategy()
    s.a_sync = not config.sync_mode or config.geo_sgd_mode
    if config.geo_sgd_mode:
        s.a_sync_configs = {"k_steps": int(config.geo_sgd_need_push_nums)}
    return s


def to_strategy(strategy: Optional[Any]) -> DistributedStrategy:
    """Any strategy a Paddle script passes, as the C++ strategy; None gives
    Paddle's default (``DistributedStrategy()``: a_sync for parameter servers)."""
    if strategy is None:
        return DistributedStrategy()
    if isinstance(strategy, DistributedStrategy):
        return strategy
    if isinstance(strategy, (CollectiveStrategy, _PsStrategy)):
        return strategy._to_v2()
    if isinstance(strategy, DistributeTranspilerConfig):
        return _from_transpiler_config(strategy)
    raise TypeError(f"strategy must be a fleet.DistributedStrategy (or a Paddle 1.x strategy), got "
                    f"{type(strategy).__name__}")


__all__ = ["CollectiveStrategy", "SyncStrategy", "AsyncStrategy", "HalfAsyncStrategy", "GeoStrategy",
           "StrategyFactory", "to_strategy"]
