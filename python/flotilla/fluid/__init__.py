"""Paddle 1.x names (``paddle.fluid``) over Flotilla's core: the static
graph API of Paddle 1.x scripts, unchanged.

    import flotilla.fluid as fluid
    x = fluid.layers.data(name="x", shape=[13], dtype="float32")
    ...
    exe = fluid.Executor(fluid.CPUPlace())
"""

from .. import executor, initializer, io, layers, nets, optimizer, regularizer  # noqa: F401
from .._alias import alias as _alias
from ..data_feeder import DataFeeder  # noqa: F401
from ..executor import Executor  # noqa: F401
from ..lod_tensor import create_lod_tensor, create_random_int_lodtensor  # noqa: F401
from ..static import data  # noqa: F401
from ..framework import (Program, Variable, default_main_program, default_startup_program,  # noqa: F401
                         global_scope, name_scope, program_guard, scope_guard)
from ..param_attr import ParamAttr  # noqa: F401
from ..place import CPUPlace, CUDAPlace, cpu_places, cuda_places, is_compiled_with_cuda  # noqa: F401
from ..strategies import BuildStrategy, CompiledProgram, ExecutionStrategy  # noqa: F401
from ..distributed.transpiler import DistributeTranspiler, DistributeTranspilerConfig  # noqa: F401
from ..static.io import load, load_program_state, save, set_program_state  # noqa: F401
from . import compiler, core, dataset, unique_name  # noqa: F401
from .core import LoDTensor  # noqa: F401
from .dataset import DatasetFactory, InMemoryDataset, QueueDataset  # noqa: F401

for _name, _module in (("layers", layers), ("optimizer", optimizer), ("initializer", initializer),
                       ("regularizer", regularizer), ("io", io), ("nets", nets)):
    _alias(f"{__name__}.{_name}", _module)

__all__ = ["layers", "nets", "optimizer", "initializer", "regularizer", "io", "core", "unique_name", "DataFeeder",
           "Executor", "Program", "Variable", "default_main_program", "default_startup_program",
           "global_scope", "name_scope", "program_guard", "scope_guard", "ParamAttr", "CPUPlace", "CUDAPlace",
           "cpu_places", "cuda_places", "is_compiled_with_cuda", "BuildStrategy", "CompiledProgram", "compiler",
           "save", "load", "load_program_state", "set_program_state",
           "ExecutionStrategy", "DistributeTranspiler", "DistributeTranspilerConfig", "dataset", "DatasetFactory",
           "InMemoryDataset", "QueueDataset", "create_lod_tensor", "create_random_int_lodtensor", "LoDTensor", "data"]
