"""Paddle's ``fluid.compiler``: ``CompiledProgram`` (``Executor.run`` takes it
wherever it takes a Program; ``with_data_parallel`` on one place is a
pass-through), ``BuildStrategy``, ``ExecutionStrategy``."""

from ..strategies import BuildStrategy, CompiledProgram, ExecutionStrategy  # noqa: F401

__all__ = ["CompiledProgram", "BuildStrategy", "ExecutionStrategy"]
