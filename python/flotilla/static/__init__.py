"""Paddle 2.x static-graph names (``paddle.static``) over Flotilla's core."""

from typing import Sequence

from .. import _core
from ..executor import Executor  # noqa: F401
from ..framework import (Program, Variable, default_main_program, default_startup_program,  # noqa: F401
                         global_scope, name_scope, program_guard, scope_guard)
from ..io import load_inference_model_v2 as load_inference_model  # noqa: F401
from ..io import save_inference_model_v2 as save_inference_model  # noqa: F401
from ..place import CPUPlace, CUDAPlace, cpu_places, cuda_places  # noqa: F401
from ..param_attr import ParamAttr  # noqa: F401
from . import nn  # noqa: F401


def data(name: str, shape: Sequence[int], dtype="float32", lod_level: int = 0) -> Variable:
    """A fed variable with exactly ``shape`` (use -1 or None for the batch);
    unlike ``fluid.layers.data`` no batch dimension is added."""
    if lod_level != 0:
        raise NotImplementedError(f"paddle.static.data(name={name!r}, lod_level={lod_level}): "
                                  "LoD tensors are not in Flotilla")
    return _core.layers.data(name, [-1 if d is None else int(d) for d in shape], dtype, False)
