"""Paddle 2.x static-graph names (``paddle.static``) over Flotilla's core."""

from typing import Optional, Sequence

from .. import _core
from .. import layers as _layers
from ..executor import Executor  # noqa: F401
from ..framework import (Program, Variable, default_main_program, default_startup_program,  # noqa: F401
                         global_scope, name_scope, program_guard, scope_guard)
from ..param_attr import ParamAttr  # noqa: F401
from ..place import CPUPlace, CUDAPlace, cpu_places, cuda_places  # noqa: F401
from ..strategies import BuildStrategy, CompiledProgram, ExecutionStrategy  # noqa: F401
from . import io, nn  # noqa: F401
from .io import (deserialize_persistables, deserialize_program, load, load_from_file,  # noqa: F401
                 load_inference_model, load_program_state, normalize_program, save, save_inference_model,
                 save_to_file, serialize_persistables, serialize_program, set_program_state)


def data(name: str, shape: Sequence[Optional[int]], dtype="float32", lod_level: int = 0) -> Variable:
    """A fed variable with exactly ``shape`` (None or -1 for the batch);
    unlike ``fluid.layers.data`` no batch dimension is added. With
    ``lod_level`` 1 each batch is variable-length sequences packed along the
    first dimension (a LoDTensor; ``shape`` is then one step's, batch first)."""
    if lod_level < 0:
        raise ValueError(f"paddle.static.data(name={name!r}): lod_level must be >= 0, got {lod_level}")
    return _core.layers.data(name, [-1 if d is None else int(d) for d in shape], dtype, False, int(lod_level))


def create_global_var(shape: Sequence[int], value: float, dtype, persistable: bool = False,
                      force_cpu: bool = False, name: Optional[str] = None) -> Variable:
    """A variable set to ``value`` by the startup program."""
    return _layers.create_global_var(shape, value, dtype, persistable, force_cpu, name)


def create_parameter(shape: Sequence[int], dtype, name: Optional[str] = None, attr=None,
                     is_bias: bool = False, default_initializer=None) -> Variable:
    """A trainable parameter initialised by the startup program."""
    return _layers.create_parameter(shape, dtype, name, attr, is_bias, default_initializer)


def accuracy(input: Variable, label: Variable, k: int = 1, correct=None, total=None,
             name: Optional[str] = None) -> Variable:
    """Top-k accuracy of class scores against int64 labels."""
    return _layers.accuracy(input, label, k, correct, total)


def auc(input: Variable, label: Variable, curve: str = "ROC", num_thresholds: int = 4095, topk: int = 1,
        slide_steps: int = 1, ins_tag_weight=None):
    """Streaming ROC AUC; see :func:`flotilla.layers.auc`."""
    return _layers.auc(input, label, curve, num_thresholds, topk, slide_steps)


__all__ = ["data", "Executor", "Program", "Variable", "program_guard", "default_main_program",
           "default_startup_program", "global_scope", "scope_guard", "name_scope", "save_inference_model",
           "load_inference_model", "CPUPlace", "CUDAPlace", "cpu_places", "cuda_places", "ParamAttr", "nn",
           "create_global_var", "create_parameter", "accuracy", "auc", "io", "normalize_program",
           "serialize_program", "serialize_persistables", "deserialize_program", "deserialize_persistables",
           "save_to_file", "load_from_file", "save", "load", "load_program_state", "set_program_state",
           "BuildStrategy", "CompiledProgram", "ExecutionStrategy"]
