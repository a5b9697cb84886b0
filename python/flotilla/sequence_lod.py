"""Sequence layers over LoD variables (Paddle's ``fluid.layers.sequence_*``
and ``paddle.static.nn.sequence_lod``): variable-length sequences packed
along the first dimension, with their offsets carried by the tensor.

    ids = fluid.data(name="ids", shape=[-1, 1], dtype="int64", lod_level=1)
    emb = fluid.layers.embedding(ids, size=[10000, 16])     # keeps the offsets
    bag = fluid.layers.sequence_pool(emb, pool_type="sum")  # one row per sequence

Each function appends one op (``flotilla._core.layers.sequence_*``, the C++
``layers::sequence_*``); the kernels check the offsets when the program runs.
"""

from typing import Optional, Tuple, Union

import numpy as np

from . import _core
from .framework import Variable
from .param_attr import to_core

_L = _core.layers

_POOL_TYPES = ("sum", "average", "sqrt", "max", "first", "last")


def sequence_pool(input: Variable, pool_type: str, is_test: bool = False, pad_value: float = 0.0) -> Variable:
    """One row per sequence of ``input``'s last LoD level: ``pool_type`` is
    ``sum``, ``average``, ``sqrt`` (sum / sqrt(length)), ``max``, ``first`` or
    ``last``; an empty sequence gives ``pad_value``."""
    if str(pool_type).lower() not in _POOL_TYPES:
        raise ValueError(f"sequence_pool: pool_type={pool_type!r} is not one of {', '.join(_POOL_TYPES)}")
    return _L.sequence_pool(input, str(pool_type), bool(is_test), float(pad_value))


def sequence_first_step(input: Variable) -> Variable:
    """The first step of every sequence."""
    return _L.sequence_first_step(input)


def sequence_last_step(input: Variable) -> Variable:
    """The last step of every sequence."""
    return _L.sequence_last_step(input)


def sequence_softmax(input: Variable, use_cudnn: bool = False, name: Optional[str] = None) -> Variable:
    """Softmax over the steps of each sequence of a ``[N, 1]`` input."""
    return _L.sequence_softmax(input)


def sequence_expand(x: Variable, y: Variable, ref_level: int = -1, name: Optional[str] = None) -> Variable:
    """Each sequence of ``x`` (each row, when ``x`` has no LoD) repeated once
    per step of the matching sequence of ``y``'s level ``ref_level``."""
    return _L.sequence_expand(x, y, int(ref_level))


def sequence_expand_as(x: Variable, y: Variable, name: Optional[str] = None) -> Variable:
    """Row ``i`` of ``x`` repeated once per step of ``y``'s sequence ``i``."""
    return _L.sequence_expand_as(x, y)


def _pad_value_var(pad_value, dtype: str) -> Variable:
    if isinstance(pad_value, Variable):
        return pad_value
    values = np.asarray(pad_value, dtype=dtype).reshape(-1)
    if values.size != 1:
        raise ValueError("sequence_pad: a non-Variable pad_value must be one number; pass a Variable for a row")
    return _L.fill_constant([1], dtype, float(values[0]), "")


def sequence_pad(x: Variable, pad_value, maxlen: Optional[int] = None,
                 name: Optional[str] = None) -> Tuple[Variable, Variable]:
    """``(out, length)``: every sequence padded to ``maxlen`` steps (None: the
    longest) with ``pad_value`` (a Variable of one value or one row), and the
    int64 lengths."""
    pad = _pad_value_var(pad_value, x.dtype)
    return tuple(_L.sequence_pad(x, pad, -1 if maxlen is None else int(maxlen)))


def sequence_unpad(x: Variable, length: Variable, name: Optional[str] = None) -> Variable:
    """The first ``length[i]`` steps of ``x[i]``, packed, with their offsets."""
    return _L.sequence_unpad(x, length)


def sequence_mask(x: Variable, maxlen: Optional[Union[int, Variable]] = None, dtype="int64",
                  name: Optional[str] = None) -> Variable:
    """``mask[..., j] = j < x[...]`` for integer lengths ``x``."""
    if isinstance(maxlen, Variable):
        raise NotImplementedError("sequence_mask(maxlen=Variable) is not in Flotilla yet; pass an int")
    return _L.sequence_mask(x, -1 if maxlen is None else int(maxlen), dtype)


def sequence_reverse(x: Variable, name: Optional[str] = None) -> Variable:
    """Each sequence with its steps in reverse order."""
    return _L.sequence_reverse(x)


def sequence_enumerate(input: Variable, win_size: int, pad_value: int = 0, name: Optional[str] = None) -> Variable:
    """``[N, win_size]`` windows of each sequence's ids, padded with ``pad_value``."""
    return _L.sequence_enumerate(input, int(win_size), int(pad_value))


def sequence_conv(input: Variable, num_filters: int, filter_size: int = 3, filter_stride: int = 1,
                  padding: bool = True, padding_start: Optional[int] = None, bias_attr=None, param_attr=None,
                  act: Optional[str] = None, name: Optional[str] = None) -> Variable:
    """Convolution along each sequence of a ``[N, D]`` input: step ``r`` sees
    ``filter_size`` steps from ``r + padding_start`` (default
    ``-(filter_size // 2)``) of its own sequence, zeros beyond it."""
    if filter_stride != 1:
        raise NotImplementedError(f"sequence_conv: filter_stride={filter_stride}; only 1 is supported (as in Paddle)")
    acts = {None: "", "": "", "relu": "relu", "tanh": "tanh", "sigmoid": "sigmoid", "softmax": "softmax"}
    if act not in acts:
        raise ValueError(f"sequence_conv: act={act!r} is not supported (None, 'relu', 'tanh', 'sigmoid', 'softmax')")
    return _L.sequence_conv(input, int(num_filters), int(filter_size), padding_start, to_core(param_attr),
                            to_core(bias_attr), acts[act])


def sequence_concat(input, name: Optional[str] = None) -> Variable:
    """Sequence ``i`` of the output: sequence ``i`` of every input, in order."""
    return _L.sequence_concat(list(input))


def sequence_reshape(input: Variable, new_dim: int) -> Variable:
    """Each sequence's rows regrouped into rows of ``new_dim`` values."""
    return _L.sequence_reshape(input, int(new_dim))


def sequence_slice(input: Variable, offset: Variable, length: Variable, name: Optional[str] = None) -> Variable:
    """Steps ``[offset[i], offset[i] + length[i])`` of sequence ``i``."""
    return _L.sequence_slice(input, offset, length)


def lod_reset(x: Variable, y: Optional[Variable] = None, target_lod=None) -> Variable:
    """``x``'s data with new offsets: ``y``'s LoD (or ``y``'s values read as
    offsets), else ``target_lod`` (one level of offsets)."""
    if y is None and not target_lod:
        raise ValueError("lod_reset: give y or target_lod")
    return _L.lod_reset(x, y, [int(v) for v in (target_lod or [])])


def lod_append(x: Variable, level) -> Variable:
    """``x``'s data with ``level`` (a list of offsets) added below its own levels."""
    if isinstance(level, Variable):
        raise NotImplementedError("lod_append(level=Variable) is not in Flotilla yet; pass a list of offsets")
    return _L.lod_append(x, [int(v) for v in level])


__all__ = ["lod_reset", "lod_append", "sequence_conv", "sequence_concat", "sequence_reshape", "sequence_slice", "sequence_pool", "sequence_first_step", "sequence_last_step", "sequence_softmax", "sequence_expand",
           "sequence_expand_as", "sequence_pad", "sequence_unpad", "sequence_mask", "sequence_reverse",
           "sequence_enumerate"]
