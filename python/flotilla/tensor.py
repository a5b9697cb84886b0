"""Paddle 2.x tensor functions (``paddle.reshape``, ``paddle.concat``,
``paddle.add``, ``paddle.mean``, ...) on static Variables: each appends the
C++ core's op to the default main program, as ``fluid.layers`` does."""

from typing import Optional, Sequence, Union

from . import _core
from . import layers as _layers
from .framework import Variable

_L = _core.layers


def _int_list(values: Sequence, what: str) -> list:
    out = []
    for v in values:
        if isinstance(v, Variable):
            raise NotImplementedError(f"{what} with a Variable entry (a shape computed at run time) is not in "
                                      "Flotilla; nearest: a fixed size, or -1 for the one unknown dimension")
        out.append(int(v))
    return out


def reshape(x: Variable, shape: Sequence[int], name: Optional[str] = None) -> Variable:
    """``x`` with a new shape (one entry may be -1; 0 keeps that dimension)."""
    return _L.reshape(x, _int_list(shape, "paddle.reshape(shape=...)"))


def concat(x: Sequence[Variable], axis: int = 0, name: Optional[str] = None) -> Variable:
    """Concatenation of ``x`` along ``axis``."""
    return _L.concat(list(x), int(axis))


def add(x: Variable, y: Variable, name: Optional[str] = None) -> Variable:
    """x + y (broadcasting y)."""
    return _L.elementwise_add(x, y, -1, "")


def subtract(x: Variable, y: Variable, name: Optional[str] = None) -> Variable:
    """x - y (broadcasting y)."""
    return _L.elementwise_sub(x, y, -1, "")


def multiply(x: Variable, y: Variable, name: Optional[str] = None) -> Variable:
    """x * y (broadcasting y)."""
    return _L.elementwise_mul(x, y, -1, "")


def divide(x: Variable, y: Variable, name: Optional[str] = None) -> Variable:
    """x / y (broadcasting y)."""
    return _L.elementwise_div(x, y, -1, "")


def maximum(x: Variable, y: Variable, name: Optional[str] = None) -> Variable:
    """max(x, y) elementwise (broadcasting)."""
    return _L.elementwise_max(x, y, -1, "")


def minimum(x: Variable, y: Variable, name: Optional[str] = None) -> Variable:
    """min(x, y) elementwise (broadcasting)."""
    return _L.elementwise_min(x, y, -1, "")


def less_than(x: Variable, y: Variable, name: Optional[str] = None) -> Variable:
    """x < y elementwise: 1/0 as int64 (Flotilla has no bool dtype)."""
    return _L.compare("less_than", x, y, -1)


def less_equal(x: Variable, y: Variable, name: Optional[str] = None) -> Variable:
    """x <= y elementwise: 1/0 as int64."""
    return _L.compare("less_equal", x, y, -1)


def greater_than(x: Variable, y: Variable, name: Optional[str] = None) -> Variable:
    """x > y elementwise: 1/0 as int64."""
    return _L.compare("greater_than", x, y, -1)


def greater_equal(x: Variable, y: Variable, name: Optional[str] = None) -> Variable:
    """x >= y elementwise: 1/0 as int64."""
    return _L.compare("greater_equal", x, y, -1)


def equal(x: Variable, y: Variable, name: Optional[str] = None) -> Variable:
    """x == y elementwise: 1/0 as int64."""
    return _L.compare("equal", x, y, -1)


def not_equal(x: Variable, y: Variable, name: Optional[str] = None) -> Variable:
    """x != y elementwise: 1/0 as int64."""
    return _L.compare("not_equal", x, y, -1)


def matmul(x: Variable, y: Variable, transpose_x: bool = False, transpose_y: bool = False,
           name: Optional[str] = None) -> Variable:
    """Matrix product of op(x) and op(y)."""
    return _L.matmul(x, y, bool(transpose_x), bool(transpose_y), 1.0)


def _axes(axis: Union[None, int, Sequence[int]]) -> list:
    if axis is None:
        return []
    return [int(a) for a in (axis if isinstance(axis, (list, tuple)) else [axis])]


def mean(x: Variable, axis: Union[None, int, Sequence[int]] = None, keepdim: bool = False,
         name: Optional[str] = None) -> Variable:
    """Mean over ``axis`` (every element when None: a [1] variable)."""
    if axis is None and not keepdim:
        return _L.mean(x)
    return _L.reduce_mean(x, _axes(axis), bool(keepdim))


def sum(x: Variable, axis: Union[None, int, Sequence[int]] = None, dtype=None, keepdim: bool = False,
        name: Optional[str] = None) -> Variable:
    """Sum over ``axis`` (every element when None)."""
    out = _L.reduce_sum(x, _axes(axis), bool(keepdim))
    return _L.cast(out, dtype) if dtype is not None else out


def cast(x: Variable, dtype) -> Variable:
    """``x`` converted to ``dtype``."""
    return _L.cast(x, dtype)


def scale(x: Variable, scale: float = 1.0, bias: float = 0.0, bias_after_scale: bool = True, act=None,
          name: Optional[str] = None) -> Variable:
    """``scale * x + bias``."""
    return _layers.scale(x, scale, bias, bias_after_scale, act)


def full(shape: Sequence[int], fill_value: float, dtype="float32", name: Optional[str] = None) -> Variable:
    """A variable of a fixed ``shape`` filled with ``fill_value``."""
    return _L.fill_constant(_int_list(shape, "paddle.full(shape=...)"), dtype, float(fill_value), name or "")


def zeros(shape: Sequence[int], dtype="float32", name: Optional[str] = None) -> Variable:
    """A variable of a fixed ``shape`` filled with 0 (Paddle's ``paddle.zeros``)."""
    return full(shape, 0.0, dtype, name)


def ones(shape: Sequence[int], dtype="float32", name: Optional[str] = None) -> Variable:
    """A variable of a fixed ``shape`` filled with 1 (Paddle's ``paddle.ones``)."""
    return full(shape, 1.0, dtype, name)


__all__ = ["reshape", "concat", "add", "subtract", "multiply", "divide", "matmul", "mean", "sum", "cast",
           "scale", "full", "zeros", "ones", "maximum", "minimum", "less_than", "less_equal", "greater_than",
           "greater_equal", "equal", "not_equal"]
