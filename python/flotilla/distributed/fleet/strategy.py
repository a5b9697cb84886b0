"""DistributedStrategy (Paddle's ``paddle.distributed.fleet.DistributedStrategy``):
the C++ core's strategy protobuf, every field readable and settable by its
Paddle name.

    strategy = fleet.DistributedStrategy()
    strategy.nccl_comm_num = 2
    strategy.localsgd = True
    strategy.localsgd_configs = {"k_steps": 4, "begin_step": 10}
    strategy.local_sgd_steps = 4             # Paddle 1.x's names work too:
    strategy.local_sgd_is_warm_steps = 9     # begin_step = warm-up steps + 1
    strategy.a_sync_configs = {"k_steps": 100}        # GEO

Config groups read as dicts and assigning a dict updates the keys it names.
Fields the C++ core applies are listed by ``fields()``; Paddle options
Flotilla lacks (``amp``, ``recompute``, ``pipeline``, ``dgc``, ...) read as
off and raise NotImplementedError naming the option when switched on.
Whether a value takes effect or is refused is decided by the C++ core when
``minimize`` runs (``DistributedStrategy::Validate``).
"""

from typing import Any, Dict, List

from ... import _core
from ...strategies import BuildStrategy, ExecutionStrategy

_F = _core.fleet

# Paddle 2.x options without a Flotilla implementation: flag → its configs.
_UNSUPPORTED = {
    "amp": "amp_configs", "recompute": "recompute_configs", "pipeline": "pipeline_configs",
    "tensor_parallel": "tensor_parallel_configs", "sharding": "sharding_configs", "dgc": "dgc_configs",
    "lars": "lars_configs", "lamb": "lamb_configs", "adaptive_localsgd": "adaptive_localsgd_configs",
    "fp16_allreduce": None, "auto": None, "semi_auto": None, "heter_ccl_mode": None, "qat": "qat_configs",
    "asp": None, "find_unused_parameters": None, "without_graph_optimization": None, "elastic": None,
    "cudnn_exhaustive_search": None, "cudnn_batchnorm_spatial_persistent": None,
}
_EXEC_FIELDS = ("num_threads", "num_iteration_per_drop_scope", "num_iteration_per_run")
# Paddle 1.x's LocalSGD names, read and written through localsgd and localsgd_configs.
_LOCALSGD_1X = ("use_local_sgd", "local_sgd_steps", "local_sgd_is_warm_steps")


class DistributedStrategy:
    """The knobs of distributed training; see the module docstring."""

    def __init__(self) -> None:
        object.__setattr__(self, "_core", _F.DistributedStrategy())
        object.__setattr__(self, "_fields", set(self._core._fields()))

    # ---- attribute access by Paddle name ----

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        fields = object.__getattribute__(self, "_fields")
        if name in ("execution_strategy", "exec_strategy"):
            return self._exec_strategy()
        if name in fields:
            return self._core._get(name)
        if name in _LOCALSGD_1X:
            return self._localsgd_1x(name)
        if name == "build_strategy":
            build = BuildStrategy()
            build.fuse_all_reduce_ops = self._core._get("fuse_all_reduce_ops")
            build.nccl_comm_num = self._core._get("nccl_comm_num") or self._core._get("comm_num")
            build.use_hierarchical_allreduce = self._core._get("use_hierarchical_allreduce")
            return build
        if name in _UNSUPPORTED:
            return False
        if name in {c for c in _UNSUPPORTED.values() if c}:
            return {}
        raise AttributeError(f"DistributedStrategy has no field {name!r}; fields: {', '.join(sorted(fields))}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "fetch_frequency":
            _refuse_fetch_frequency(value)
        if name in ("execution_strategy", "exec_strategy"):
            self._set_exec_strategy(value)
        elif name in self._fields:
            self._core._set(name, value)
        elif name in _LOCALSGD_1X:
            self._set_localsgd_1x(name, value)
        elif name == "build_strategy":
            self._set_build_strategy(value)
        elif name in _UNSUPPORTED:
            if value:
                raise NotImplementedError(
                    f"DistributedStrategy.{name} = {value!r} (Paddle's {name}) is not in Flotilla; "
                    "nearest: " + _nearest(name))
        elif name in {c for c in _UNSUPPORTED.values() if c}:
            if value:
                raise NotImplementedError(f"DistributedStrategy.{name}: the option it configures is not in "
                                          "Flotilla")
        else:
            raise AttributeError(f"DistributedStrategy has no field {name!r}; fields: "
                                 f"{', '.join(sorted(self._fields))}")

    def _localsgd_1x(self, name: str) -> Any:
        if name == "use_local_sgd":
            return self._core._get("localsgd")
        if name == "local_sgd_steps":
            return self._core._get("localsgd_configs.k_steps")
        return self._core._get("localsgd_configs.begin_step") - 1

    def _set_localsgd_1x(self, name: str, value: Any) -> None:
        # Paddle 1.x's warm-up steps run synchronously; LocalSGD begins after them.
        if name == "use_local_sgd":
            self._core._set("localsgd", value)
        elif name == "local_sgd_steps":
            self._core._set("localsgd_configs.k_steps", value)
        else:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"DistributedStrategy.local_sgd_is_warm_steps must be an int >= 0, got {value!r}")
            self._core._set("localsgd_configs.begin_step", value + 1)

    def _exec_strategy(self) -> ExecutionStrategy:
        out = ExecutionStrategy()
        for field, value in self._exec_fields().items():
            setattr(out, field, value)
        return out

    def _exec_fields(self) -> Dict[str, int]:
        """The exec_strategy fields that were given a value."""
        return {f: self._core._get(f"exec_strategy.{f}") for f in _EXEC_FIELDS
                if self._core._has(f"exec_strategy.{f}")}

    def _check_applicable(self) -> None:
        """Refuses what the C++ core keeps but Flotilla's Python side does not
        apply (a strategy loaded from a prototxt reaches here unchecked)."""
        _refuse_fetch_frequency(self._core._get("fetch_frequency"))

    def _set_exec_strategy(self, value: Any) -> None:
        if isinstance(value, dict):
            self._core._set("exec_strategy", value)
            return
        if not isinstance(value, ExecutionStrategy):
            raise TypeError(f"exec_strategy must be an ExecutionStrategy, got {type(value).__name__}")
        if value.use_thread_barrier:
            raise NotImplementedError("ExecutionStrategy.use_thread_barrier=True is not in Flotilla "
                                      "(its executor runs ops on one thread)")
        self._core._set("exec_strategy", {f: int(v) for f, v in value._changed().items() if f in _EXEC_FIELDS})

    def _set_build_strategy(self, value: Any) -> None:
        if not isinstance(value, BuildStrategy):
            raise TypeError(f"build_strategy must be a BuildStrategy, got {type(value).__name__}")
        applied = {"fuse_all_reduce_ops", "nccl_comm_num", "use_hierarchical_allreduce", "sync_batch_norm",
                   "enable_inplace", "memory_optimize"}  # the last two change no result
        refused = {k: v for k, v in value._changed().items() if k not in applied}
        if refused:
            raise NotImplementedError(f"BuildStrategy fields {refused} are not in Flotilla")
        self._core._set("fuse_all_reduce_ops", bool(value.fuse_all_reduce_ops))
        self._core._set("nccl_comm_num", int(value.nccl_comm_num))
        self._core._set("use_hierarchical_allreduce", bool(value.use_hierarchical_allreduce))
        if "sync_batch_norm" in self._fields:
            self._core._set("sync_batch_norm", bool(value.sync_batch_norm))

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
        an unknown field raises InvalidArgumentError naming it."""
        with open(pb_file) as f:
            object.__setattr__(self, "_core", _F.DistributedStrategy.from_text(f.read(), pb_file))

    def __repr__(self) -> str:
        return "DistributedStrategy {\n" + self._core.to_text() + "}"


def _refuse_fetch_frequency(value: Any) -> None:
    if value != 1:
        raise NotImplementedError(
            f"DistributedStrategy.fetch_frequency={value!r}: Flotilla's executor fetches what each "
            "exe.run asks for; fetch every N steps in the training loop instead (exe.run without "
            "fetch_list copies nothing out)")


def _nearest(name: str) -> str:
    return {
        "recompute": "a smaller batch or model",
        "amp": "float32 training (the CPU backend has no float16 kernels)",
        "fp16_allreduce": "float32 all-reduce",
        "dgc": "fuse_all_reduce_ops with a larger fuse_grad_size_in_MB, or localsgd",
        "lars": "Momentum", "lamb": "Adam",
        "adaptive_localsgd": "localsgd with localsgd_configs",
        "pipeline": "data parallelism (fleet collective)",
        "tensor_parallel": "data parallelism (fleet collective)",
        "sharding": "data parallelism (fleet collective)",
    }.get(name, "leave it off")


__all__ = ["DistributedStrategy"]
