"""Programs, variables and scopes (Paddle's ``fluid.framework``).

A :class:`Program` is the C++ core's program; layers append to
:func:`default_main_program` (or the programs of the innermost
:func:`program_guard`). Variables support Paddle's operators:
``a + b``, ``1 - p``, ``x * 2.0``, ``-x``, ``a / b``, ``x / 2``, ``a @ b``.
"""

import contextlib
import numbers
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
    if startup_program is not None and not isinstance(startup_program, Program):
        raise TypeError(f"program_guard: startup_program must be a Program, got "
                        f"{type(startup_program).__name__}")
    with _core._ProgramGuard(main_program, startup_program):
        yield


@contextlib.contextmanager
def unique_name_guard(new_generator=None) -> Iterator[None]:
    """Restarts generated names ("fc_0", ...) inside the ``with`` block, so two
    programs built under separate guards get the same names (Paddle's
    ``fluid.unique_name.guard``)."""
    if new_generator is not None:
        raise NotImplementedError("unique_name.guard(new_generator=...): Flotilla restarts the counters; "
                                  "call unique_name.guard() without an argument")
    with _core._UniqueNameGuard():
        yield


def unique_name(prefix: str) -> str:
    """``"fc"`` → ``"fc_0"``, ``"fc_1"``, ... (Paddle's ``unique_name.generate``)."""
    return _core.unique_name(prefix)


@contextlib.contextmanager
def name_scope(prefix: Optional[str] = None) -> Iterator[None]:
    """Paddle's ``fluid.name_scope``: groups ops for visualisation only; it
    changes no name and no result, in Paddle as here."""
    yield


# ---- operators on Variables (Paddle's math_op_patch) ----

Scalar = Union[int, float]


def _is_scalar(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _scale(x: Variable, scale: float, bias: float = 0.0) -> Variable:
    return _core.layers.scale(x, float(scale), float(bias), True)


def _add(x, y):
    return _scale(x, 1.0, y) if _is_scalar(y) else _core.layers.elementwise_add(x, y, -1, "")


def _sub(x, y):
    return _scale(x, 1.0, -y) if _is_scalar(y) else _core.layers.elementwise_sub(x, y, -1, "")


def _mul(x, y):
    return _scale(x, y) if _is_scalar(y) else _core.layers.elementwise_mul(x, y, -1, "")


def _div(x, y):
    if _is_scalar(y):
        if y == 0:
            raise ZeroDivisionError(f"Variable {x.name} / 0")
        return _scale(x, 1.0 / y)
    return _core.layers.elementwise_div(x, y, -1, "")


def _binary(fn):
    def method(self: Variable, other):
        if not (_is_scalar(other) or isinstance(other, Variable)):
            return NotImplemented
        return fn(self, other)
    return method


def _rsub(self: Variable, other):
    if not _is_scalar(other):
        return NotImplemented
    return _scale(self, -1.0, other)


def _rdiv(self: Variable, other):
    if not _is_scalar(other):
        return NotImplemented
    raise NotImplementedError(
        f"{other!r} / Variable (Paddle's scalar / Variable): Flotilla has no reciprocal op yet; "
        "nearest: layers.elementwise_div(layers.fill_constant(...), x)")


def _compare(name: str):
    def method(self: Variable, other):
        raise NotImplementedError(
            f"Variable {name} (Paddle's paddle.{name} / fluid.layers.{name}): Flotilla has no "
            "comparison ops yet; nearest: compare the fetched NumPy arrays")
    return method


Variable.__add__ = _binary(_add)
Variable.__radd__ = _binary(_add)
Variable.__sub__ = _binary(_sub)
Variable.__rsub__ = _rsub
Variable.__mul__ = _binary(_mul)
Variable.__rmul__ = _binary(_mul)
Variable.__truediv__ = _binary(_div)
Variable.__rtruediv__ = _rdiv
Variable.__neg__ = lambda self: _scale(self, -1.0)
Variable.__matmul__ = lambda self, other: _core.layers.matmul(self, other, False, False, 1.0)
Variable.__array_ufunc__ = None  # numpy scalars defer to the operators above
Variable.__lt__ = _compare("less_than")
Variable.__le__ = _compare("less_equal")
Variable.__gt__ = _compare("greater_than")
Variable.__ge__ = _compare("greater_equal")
# Variables are handles: equal when they name the same variable of one program.
Variable.__eq__ = lambda self, other: isinstance(other, Variable) and other.name == self.name and \
    other.block.program._id == self.block.program._id
Variable.__ne__ = lambda self, other: not self.__eq__(other)
Variable.__hash__ = lambda self: hash(self.name)


def _prune_with_input(self: Program, feeded_var_names, targets) -> Program:
    """Paddle's ``Program._prune_with_input``: the program cut to what computes
    ``targets`` (Variables or names); the fed variables stay feedable."""
    names = [t.name if isinstance(t, Variable) else str(t) for t in
             (targets if isinstance(targets, (list, tuple)) else [targets])]
    return self._prune(names)


Program._prune_with_input = _prune_with_input


def _var_astype(self: Variable, dtype) -> Variable:
    """The variable converted to ``dtype`` (a cast op)."""
    return _core.layers.cast(self, dtype)


Variable.astype = _var_astype

__all__ = [
    "Program", "Variable", "Block", "Scope", "default_main_program", "default_startup_program",
    "global_scope", "scope_guard", "program_guard", "unique_name_guard", "unique_name", "name_scope",
]
