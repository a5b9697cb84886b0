"""Paddle 1.x execution settings: ``ExecutionStrategy``, ``BuildStrategy``
and ``CompiledProgram``.

Flotilla runs one process per device, so a CompiledProgram is its program on
one place; its strategies are carried to fleet's DistributedStrategy, which
applies each field or refuses it by name (see
``flotilla.distributed.fleet.DistributedStrategy``).
"""

import enum
from typing import Any, Mapping, Optional

from . import _core
from .framework import Program


class _Settings:
    """Fixed attributes with defaults: a misspelt field raises AttributeError
    instead of being silently ignored."""

    _defaults: dict = {}

    def __init__(self) -> None:
        for name, value in self._defaults.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._defaults:
            raise AttributeError(f"{type(self).__name__} has no field {name!r} (fields: "
                                 f"{', '.join(sorted(self._defaults))})")
        object.__setattr__(self, name, value)

    def _changed(self) -> dict:
        """The fields set to something other than their default."""
        return {k: getattr(self, k) for k, v in self._defaults.items() if getattr(self, k) != v}

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._defaults)
        return f"{type(self).__name__}({fields})"


class ExecutionStrategy(_Settings):
    """How a program's iterations run (Paddle's ``fluid.ExecutionStrategy``),
    applied by :func:`apply_execution_strategy`: ``num_threads``,
    ``num_iteration_per_drop_scope``, ``num_iteration_per_run``;
    ``use_thread_barrier=True`` is refused."""

    _defaults = {"num_threads": 1, "num_iteration_per_drop_scope": 100, "num_iteration_per_run": 1,
                 "use_thread_barrier": False}


def apply_execution_strategy(program: Program, fields: Mapping[str, Any]) -> None:
    """Applies the ExecutionStrategy fields a user set (``fields``: name →
    value; absent ones keep Flotilla's behaviour) to ``program``:

    - ``num_threads``: the threads this process's GEMM kernels use, at most
      the CPUs it may run on (Flotilla runs a program's ops in order on one
      thread; the threads go to the large kernels instead);
    - ``num_iteration_per_run``: ``Executor.run(program)`` runs it that many
      times;
    - ``num_iteration_per_drop_scope``: its temporaries are freed every that
      many runs (unset: kept for the life of the executor).

    The C++ core decides and applies (``fleet::ApplyExecutionStrategy``, as
    fleet's ``minimize`` does): TypeError naming a field of the wrong type,
    InvalidArgumentError (a ValueError) naming one out of range,
    UnimplementedError (a NotImplementedError) for ``use_thread_barrier``;
    the counts become ``program._run_settings``, which the C++ executor
    honours."""
    strategy = _core.fleet.DistributedStrategy()
    strategy._set("exec_strategy", dict(fields))
    _core.fleet._apply_exec_strategy(strategy, program)


class BuildStrategy(_Settings):
    """Graph-building options (Paddle's ``fluid.BuildStrategy``). Fleet
    applies ``fuse_all_reduce_ops``, ``nccl_comm_num``,
    ``use_hierarchical_allreduce``, ``hierarchical_allreduce_inter_nranks``
    and ``sync_batch_norm``; the graph passes are hints, and
    ``gradient_scale_strategy`` other than CoeffNumDevice is refused (see
    ``fleet::DistributedStrategy::Validate``)."""

    class ReduceStrategy(enum.IntEnum):
        AllReduce = 0
        Reduce = 1

    class GradientScaleStrategy(enum.IntEnum):
        CoeffNumDevice = 0
        One = 1
        Customized = 2

    _defaults = {"fuse_all_reduce_ops": True, "nccl_comm_num": 1, "use_hierarchical_allreduce": False,
                 "hierarchical_allreduce_inter_nranks": 0, "enable_inplace": True, "memory_optimize": None,
                 "fuse_elewise_add_act_ops": False, "fuse_bn_act_ops": False, "fuse_relu_depthwise_conv": False,
                 "fuse_broadcast_ops": False, "fuse_all_optimizer_ops": False, "enable_auto_fusion": False,
                 "enable_backward_optimizer_op_deps": True, "cache_runtime_context": False,
                 "enable_sequential_execution": False, "sync_batch_norm": False, "reduce_strategy": None,
                 "gradient_scale_strategy": None, "trainers_endpoints": []}


class CompiledProgram:
    """A program prepared for running (Paddle's ``fluid.CompiledProgram``).
    ``Executor.run`` accepts it wherever it accepts a Program."""

    def __init__(self, program_or_graph: Program, build_strategy: Optional[BuildStrategy] = None):
        if not isinstance(program_or_graph, Program):
            raise TypeError(f"CompiledProgram: expected a Program, got {type(program_or_graph).__name__}")
        self._program = program_or_graph
        self._build_strategy = build_strategy

    def with_data_parallel(self, loss_name: Optional[str] = None, build_strategy: Optional[BuildStrategy] = None,
                           exec_strategy: Optional[ExecutionStrategy] = None, share_vars_from: Any = None,
                           places: Any = None) -> "CompiledProgram":
        """Data parallelism on the places of this process. Flotilla runs one
        process per device (``flotilla launch``, fleet), so only one place is
        accepted here."""
        if places is not None and len(places) > 1:
            raise NotImplementedError(
                f"CompiledProgram.with_data_parallel(places={places!r}): Flotilla runs one process per "
                "device; nearest: fleet.distributed_optimizer under `flotilla launch --devices ...`")
        if exec_strategy is not None:
            apply_execution_strategy(self._program, exec_strategy._changed())
        return self


__all__ = ["ExecutionStrategy", "BuildStrategy", "CompiledProgram", "apply_execution_strategy"]
