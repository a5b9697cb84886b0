"""DistributedStrategy (Paddle's ``paddle.distributed.fleet.DistributedStrategy``):
the C++ core's strategy protobuf, every field of Paddle 2.x's strategy
readable and settable by its Paddle name.

    strategy = fleet.DistributedStrategy()
    strategy.nccl_comm_num = 2
    strategy.localsgd = True
    strategy.localsgd_configs = {"k_steps": 4, "begin_step": 10}
    strategy.local_sgd_steps = 4             # Paddle 1.x's names work too:
    strategy.local_sgd_is_warm_steps = 9     # begin_step = warm-up steps + 1
    strategy.a_sync_configs = {"k_steps": 100}        # GEO

Config groups read as dicts and assigning a dict updates the keys it names.
As in Paddle, a value of the wrong type is not stored: a warning names the
field and the old value stays (``a_sync`` raises ValueError, as Paddle's
does). What a field does is the C++ core's decision
(``fleet::DistributedStrategy::Validate``), reflected here:

- applied: the fields Flotilla implements;
- hints (``auto``, ``cudnn_*``, ``conv_workspace_size_limit``,
  ``_fuse_grad_size_in_TFLOPS``, ...): no effect on the CPU backend; the first
  assignment away from the default warns once per process, with the core's
  message;
- refused (``amp``, ``dgc``, ``lars``, ``pipeline``, ``fetch_frequency`` != 1,
  ...): accepted at assignment, refused by ``minimize`` with an
  UnimplementedError (a NotImplementedError) naming the field and the
  nearest option.
"""

import warnings
from typing import Any, Dict, List

from ... import _core
from ...strategies import BuildStrategy, ExecutionStrategy

_F = _core.fleet

# Paddle's Python names whose proto field is spelt differently.
_ALIASES = {"execution_strategy": "exec_strategy", "_fuse_grad_size_in_TFLOPS": "fuse_grad_size_in_TFLOPS"}
# Paddle raises for a wrong-typed value of these instead of warning.
_RAISES_ON_WRONG_TYPE = {"a_sync": ValueError, "fp16_compress": TypeError, "fp16_allreduce": TypeError}
_EXEC_FIELDS = ("num_threads", "num_iteration_per_drop_scope", "num_iteration_per_run", "use_thread_barrier")
# Paddle 1.x's LocalSGD names, read and written through localsgd and localsgd_configs.
_LOCALSGD_1X = ("use_local_sgd", "local_sgd_steps", "local_sgd_is_warm_steps")
# BuildStrategy fields that are DistributedStrategy fields; the others go to
# its build_strategy group (hints, or refused by the core when applied).
_BUILD_TOP_LEVEL = ("fuse_all_reduce_ops", "nccl_comm_num", "use_hierarchical_allreduce",
                    "hierarchical_allreduce_inter_nranks", "sync_batch_norm")


class UnknownFieldError(AttributeError, TypeError):
    """Assigning a field DistributedStrategy does not have (Paddle raises
    TypeError; Python code expects AttributeError)."""


class DistributedStrategy:
    """The knobs of distributed training; see the module docstring."""

    def __init__(self) -> None:
        object.__setattr__(self, "_core", _F.DistributedStrategy())
        object.__setattr__(self, "_fields", set(self._core._fields()))

    # ---- attribute access by Paddle name ----

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        name = _ALIASES.get(name, name)
        if name == "exec_strategy":
            return self._exec_strategy()
        if name == "build_strategy":
            return self._build_strategy()
        if name in object.__getattribute__(self, "_fields"):
            return self._core._get(name)
        if name in _LOCALSGD_1X:
            return self._localsgd_1x(name)
        raise AttributeError(f"DistributedStrategy has no field {name!r}; fields: {', '.join(self.fields())}")

    def __setattr__(self, name: str, value: Any) -> None:
        name = _ALIASES.get(name, name)
        if name == "exec_strategy":
            self._set_exec_strategy(value)
        elif name == "build_strategy":
            set_build_strategy(self, value)
        elif name in _LOCALSGD_1X:
            self._set_localsgd_1x(name, value)
        elif name in self._fields:
            self._set(name, value)
        else:
            raise UnknownFieldError(f"DistributedStrategy has no field {name!r}; fields: {', '.join(self.fields())}")
        for hint in self._core._new_hints():
            warnings.warn(hint, RuntimeWarning, stacklevel=2)

    def _set(self, path: str, value: Any) -> None:
        """Stores ``value``; a scalar of the wrong type warns and keeps the
        old value, as Paddle's setters do."""
        try:
            self._core._set(path, value)
        except TypeError as e:
            if isinstance(self._core._get(path), dict):
                raise
            if path in _RAISES_ON_WRONG_TYPE:
                raise _RAISES_ON_WRONG_TYPE[path](str(e)) from None
            warnings.warn(f"{e}; keeping {self._core._get(path)!r}", UserWarning, stacklevel=3)

    def _localsgd_1x(self, name: str) -> Any:
        if name == "use_local_sgd":
            return self._core._get("localsgd")
        if name == "local_sgd_steps":
            return self._core._get("localsgd_configs.k_steps")
        return self._core._get("localsgd_configs.begin_step") - 1

    def _set_localsgd_1x(self, name: str, value: Any) -> None:
        # Paddle 1.x's warm-up steps run synchronously; LocalSGD begins after them.
        if name == "use_local_sgd":
            self._set("localsgd", value)
        elif name == "local_sgd_steps":
            self._set("localsgd_configs.k_steps", value)
        else:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"DistributedStrategy.local_sgd_is_warm_steps must be an int >= 0, got {value!r}")
            self._set("localsgd_configs.begin_step", value + 1)

    def _exec_strategy(self) -> ExecutionStrategy:
        out = ExecutionStrategy()
        for field, value in self._exec_fields().items():
            setattr(out, field, value)
        return out

    def _exec_fields(self) -> Dict[str, Any]:
        """The exec_strategy fields that were given a value."""
        return {f: self._core._get(f"exec_strategy.{f}") for f in _EXEC_FIELDS
                if self._core._has(f"exec_strategy.{f}")}

    def _set_exec_strategy(self, value: Any) -> None:
        if isinstance(value, ExecutionStrategy):
            value = value._changed()
        if not isinstance(value, dict):
            raise TypeError(f"exec_strategy must be an ExecutionStrategy, got {type(value).__name__}")
        self._core._set("exec_strategy", value)

    def _build_strategy(self) -> BuildStrategy:
        build = BuildStrategy()
        for field in _BUILD_TOP_LEVEL:
            setattr(build, field, self._core._get(field))
        if self._core._has("comm_num"):  # the new name wins, as in the C++ core
            build.nccl_comm_num = self._core._get("comm_num")
        for field, value in self._core._get("build_strategy").items():
            if field in BuildStrategy._defaults and self._core._has(f"build_strategy.{field}"):
                setattr(build, field, value)
        return build

    # ---- Paddle's methods ----

    def fields(self) -> List[str]:
        """The fields of the C++ strategy, by Paddle name."""
        return sorted(self._fields)

    def to_dict(self) -> Dict[str, Any]:
        """Every field and its value."""
        return {name: self._core._get(name) for name in sorted(self._fields)}

    def save_to_prototxt(self, output: str) -> None:
        """Writes the strategy as protobuf text (Paddle's format)."""
        with open(output, "w") as f:
            f.write(self._core.to_text())

    def load_from_prototxt(self, pb_file: str) -> None:
        """Reads a strategy written by :meth:`save_to_prototxt` (or by hand);
        an unknown field or a value out of range raises InvalidArgumentError
        naming it. Refused options load, and are refused by ``minimize``."""
        with open(pb_file) as f:
            object.__setattr__(self, "_core", _F.DistributedStrategy.from_text(f.read(), pb_file))

    def _enable_env(self) -> None:
        """Paddle exports the cuDNN fields as FLAGS_* variables here; they are
        hints in Flotilla, so nothing is exported."""

    def __repr__(self) -> str:
        return "DistributedStrategy {\n" + self._core.to_text() + "}"


def set_build_strategy(strategy: DistributedStrategy, build: BuildStrategy) -> None:
    """Maps a BuildStrategy (Paddle's ``fluid.BuildStrategy``, or a 1.x
    collective strategy) onto ``strategy``: nccl_comm_num, fuse_all_reduce_ops,
    use_hierarchical_allreduce, hierarchical_allreduce_inter_nranks and
    sync_batch_norm onto its fields, the rest onto its build_strategy group,
    which the C++ core reads as hints or refuses when applied."""
    if not isinstance(build, BuildStrategy):
        raise TypeError(f"build_strategy must be a BuildStrategy, got {type(build).__name__}")
    for field in _BUILD_TOP_LEVEL:
        strategy._set(field, getattr(build, field))
    group = set(strategy._core._get("build_strategy"))
    changed = {k: v for k, v in BuildStrategy._changed(build).items()
               if k in BuildStrategy._defaults and k not in _BUILD_TOP_LEVEL}
    strategy._core._set("build_strategy", {k: _enum_value(v) for k, v in changed.items() if k in group})


def _enum_value(value: Any) -> Any:
    """Paddle's ReduceStrategy / GradientScaleStrategy values as ints."""
    return value if isinstance(value, (bool, int, float, str, list, tuple)) else int(value)


__all__ = ["DistributedStrategy", "set_build_strategy"]
