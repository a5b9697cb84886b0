"""Flotilla: distributed deep-learning training with a C++ core.

``import flotilla`` for Flotilla's own API; ``flotilla.fluid`` and
``flotilla.static`` carry Paddle's 1.x and 2.x static-graph names, and
``python3 -m flotilla.paddle_compat train.py`` runs an unchanged Paddle script.
"""

from . import _core  # noqa: F401  (loads the C++ core and registers its ops)
from . import errors  # noqa: F401
from .framework import (Program, Variable, default_main_program, default_startup_program,  # noqa: F401
                        global_scope, program_guard, scope_guard)
from .place import CPUPlace, CUDAPlace  # noqa: F401
from .executor import Executor  # noqa: F401
from .reader import batch  # noqa: F401
from . import reader, dataset, layers, optimizer, initializer, regularizer, io  # noqa: F401
from .param_attr import ParamAttr  # noqa: F401
from .data_feeder import DataFeeder  # noqa: F401
from . import static, fluid, distributed  # noqa: F401

__version__ = "0.2.0"
