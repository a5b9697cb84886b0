"""Flotilla: distributed deep-learning training with a C++ core.

``import flotilla`` for Flotilla's own API (Paddle's names, static graphs);
``flotilla.fluid`` and ``flotilla.static`` carry Paddle's 1.x and 2.x names,
and ``python3 -m flotilla.paddle_compat train.py`` runs an unchanged Paddle
script. Python is a thin skin: programs are built, transpiled and run by the
C++ core (``flotilla._core``), with the GIL released while it runs.
"""

from . import _core  # noqa: F401  (loads the C++ core and registers its ops)
from . import errors  # noqa: F401
from .framework import (Program, Variable, default_main_program, default_startup_program,  # noqa: F401
                        global_scope, name_scope, program_guard, scope_guard, unique_name_guard)
from .place import CPUPlace, CUDAPlace, cpu_places, cuda_places, is_compiled_with_cuda  # noqa: F401
from .executor import Executor  # noqa: F401
from .param_attr import ParamAttr  # noqa: F401
from .data_feeder import DataFeeder  # noqa: F401
from .reader import batch  # noqa: F401
from . import (dataset, initializer, io, layers, nn, optimizer, reader, regularizer,  # noqa: F401
               static, strategies, fluid, distributed, vision)

__version__ = "0.2.0"

__all__ = ["Program", "Variable", "default_main_program", "default_startup_program", "global_scope",
           "name_scope", "program_guard", "scope_guard", "unique_name_guard", "CPUPlace", "CUDAPlace",
           "cpu_places", "cuda_places", "is_compiled_with_cuda", "Executor", "ParamAttr", "DataFeeder",
           "batch", "dataset", "initializer", "io", "layers", "nn", "optimizer", "reader", "regularizer",
           "static", "strategies", "fluid", "distributed", "vision", "errors"]
