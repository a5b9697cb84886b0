"""Programs, variables and scopes (Paddle's ``fluid.framework``).

A :class:`Program` is the C++ core's program; layers append to
:func:`default_main_program` (or the programs of the innermost
:func:`program_guard`). Variables support Paddle's operators:
``a + b``, ``1 - p``, ``x * 2.0``, ``-x``, ``a / b``, ``a @ b``.
"""

import contextlib
from typing import Iterator, List, Optional, Union

from . import _core

Program = _core.Program
Variable = _core.Variable
Block = _core.Block
Scope = _core.Scope

default_main_program = _core.default_main_program
default_startup_program = _core.default_startup_program

_scope_stack: List[Scope] = []


def global_scope() -> Scope:
    """The scope executors use when none is given (inside :func:`scope_guard`:
    the guard's)."""
    return _scope_stack[-1] if _scope_stack else _core.global_scope()


@contextlib.contextmanager
def scope_guard(scope: Scope) -> Iterator[Scope]:
    """Makes ``scope`` the :func:`global_scope` inside the ``with`` block."""
    _scope_stack.append(scope)
    try:
        yield scope
    finally:
        _scope_stack.pop()


@contextlib.contextmanager
def program_guard(main_program: Program, startup_program: Optional[Program] = None) -> Iterator[None]:
    """Layers append to ``main_program`` (and parameter initialisers to
    ``startup_program``, when given) inside the ``with`` block."""
    if not isinstance(main_program, Program):
        raise TypeError(f"program_guard: main_program must be a Program, got {type(main_program).__name__}")
    with _core._ProgramGuard(main_program, startup_program):
        yield


@contextlib.contextmanager
def unique_name_guard() -> Iterator[None]:
    """Restarts generated names ("fc_0", ...) inside the ``with`` block, so two
    programs built under separate guards get the same names."""
    with _core._UniqueNameGuard():
        yield


@contextlib.contextmanager
def name_scope(prefix: Optional[str] = None) -> Iterator[None]:
    """Paddle's ``fluid.name_scope``: groups ops for visualisation only; it
    changes no name and no result, in Paddle as here."""
    yield


# ---- operators on Variables (Paddle's math_op_patch) ----

Scalar = Union[int, float]


def _scale(x: Variable, scale: float, bias: float = 0.0) -> Variable:
    return _core.layers.scale(x, float(scale), float(bias), True)


def _binary(op):
    def method(self: Variable, other):
        if isinstance(other, (int, float)):
            if op == "elementwise_add":
                return _scale(self, 1.0, other)
            if op == "elementwise_sub":
                return _scale(self, 1.0, -other)
            if op == "elementwise_mul":
                return _scale(self, other)
            if op == "elementwise_div":
                return _scale(self, 1.0 / other)
        if not isinstance(other, Variable):
            return NotImplemented
        return getattr(_core.layers, op)(self, other, -1, "")
    return method


def _reflected(op):
    def method(self: Variable, other):
        if not isinstance(other, (int, float)):
            return NotImplemented
        if op == "elementwise_add":
            return _scale(self, 1.0, other)
        if op == "elementwise_sub":
            return _scale(self, -1.0, other)
        if op == "elementwise_mul":
            return _scale(self, other)
        raise NotImplementedError(
            f"{other!r} / Variable: Flotilla has no reciprocal op yet; use "
            "layers.elementwise_div with a fill_constant of the variable's shape")
    return method


def _compare(name):
    def method(self: Variable, other):
        raise NotImplementedError(
            f"Variable.{name}: Flotilla has no comparison ops (paddle.less_than, ...) yet; "
            "compare fetched NumPy arrays instead")
    return method


Variable.__add__ = _binary("elementwise_add")
Variable.__sub__ = _binary("elementwise_sub")
Variable.__mul__ = _binary("elementwise_mul")
Variable.__truediv__ = _binary("elementwise_div")
Variable.__div__ = Variable.__truediv__
Variable.__radd__ = _reflected("elementwise_add")
Variable.__rsub__ = _reflected("elementwise_sub")
Variable.__rmul__ = _reflected("elementwise_mul")
Variable.__rtruediv__ = _reflected("elementwise_div")
Variable.__neg__ = lambda self: _scale(self, -1.0)
Variable.__matmul__ = lambda self, other: _core.layers.matmul(self, other, False, False, 1.0)
for _name in ("__lt__", "__le__", "__gt__", "__ge__"):
    setattr(Variable, _name, _compare(_name))
Variable.__hash__ = lambda self: hash(self.name)
Variable.__eq__ = lambda self, other: isinstance(other, Variable) and other.name == self.name and \
    other.block.program._id == self.block.program._id


def _var_astype(self: Variable, dtype) -> Variable:
    return _core.layers.cast(self, dtype)


Variable.astype = _var_astype

__all__ = [
    "Program", "Variable", "Block", "Scope", "default_main_program", "default_startup_program",
    "global_scope", "scope_guard", "program_guard", "unique_name_guard", "name_scope",
]
