"""Paddle 2.x's common layers in static mode: ``Linear``, ``Embedding``,
``Dropout``, ``Flatten`` and the activations. Each makes its parameters when
constructed (see :mod:`flotilla.nn.layer`) and appends the C++ core's ops
when called."""

from typing import Optional

import numpy as np

from .. import _core
from ..framework import Variable
from . import functional as F
from .layer import Layer

_L = _core.layers
_F = _core.functional


class Linear(Layer):
    """``x · weight + bias`` with weight ``[in_features, out_features]``
    (Xavier) and bias ``[out_features]`` (0; none with ``bias_attr=False``).
    The ops are ``fluid.layers.fc``'s, so the results are fc's bit for bit."""

    def __init__(self, in_features: int, out_features: int, weight_attr=None, bias_attr=None,
                 name: Optional[str] = None):
        super().__init__()
        self._in_features, self._out_features = int(in_features), int(out_features)
        self.weight = self.create_parameter([in_features, out_features], attr=weight_attr, is_bias=False)
        self.bias = self.create_parameter([out_features], attr=bias_attr, is_bias=True)
        self.name = name

    def forward(self, input: Variable) -> Variable:
        return _F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self._in_features}, out_features={self._out_features}, dtype={self._dtype}"


class Embedding(Layer):
    """Rows of weight ``[num_embeddings, embedding_dim]`` (Xavier) for int64
    ids of any shape; the output is the ids' shape + ``[embedding_dim]``.
    ``sparse``: the gradient holds only the rows looked up (a sparse table
    in parameter-server jobs). ``padding_idx`` (negative: from the end)
    looks up zeros and gets no gradient."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: Optional[int] = None,
                 sparse: bool = False, weight_attr=None, name: Optional[str] = None):
        super().__init__()
        if num_embeddings <= 0 or embedding_dim <= 0:
            raise ValueError(f"Embedding: num_embeddings ({num_embeddings}) and embedding_dim ({embedding_dim}) "
                             "must be positive")
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise ValueError(f"padding_idx must be within [-{num_embeddings}, {num_embeddings})")
        self._num_embeddings, self._embedding_dim = int(num_embeddings), int(embedding_dim)
        self._padding_idx = -1 if padding_idx is None else (
            padding_idx if padding_idx >= 0 else num_embeddings + padding_idx)
        self._sparse = bool(sparse)
        self.weight = self.create_parameter([num_embeddings, embedding_dim], attr=weight_attr, is_bias=False)
        self.name = name

    def forward(self, x: Variable) -> Variable:
        return _F.embedding(x, self.weight, self._padding_idx, self._sparse)

    def extra_repr(self) -> str:
        return f"{self._num_embeddings}, {self._embedding_dim}, sparse={self._sparse}"


class Dropout(Layer):
    """Zeroes elements with probability ``p`` in training mode; passes the
    input through after ``eval()`` (``mode="upscale_in_train"``, Paddle
    2.x's default) or scales it by ``1 - p`` (``"downscale_in_infer"``)."""

    def __init__(self, p: float = 0.5, axis=None, mode: str = "upscale_in_train", name: Optional[str] = None):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p, self.axis, self.mode = float(p), axis, mode

    def forward(self, input: Variable) -> Variable:
        return F.dropout(input, self.p, self.axis, self.training, self.mode)

    def extra_repr(self) -> str:
        return f"p={self.p}, axis={self.axis}, mode={self.mode}"


class Flatten(Layer):
    """Merges dimensions ``start_axis`` .. ``stop_axis`` into one."""

    def __init__(self, start_axis: int = 1, stop_axis: int = -1):
        super().__init__()
        self.start_axis, self.stop_axis = int(start_axis), int(stop_axis)

    def forward(self, input: Variable) -> Variable:
        return flatten(input, self.start_axis, self.stop_axis)


def flatten(x: Variable, start_axis: int = 0, stop_axis: int = -1) -> Variable:
    """``x`` with dimensions ``start_axis`` .. ``stop_axis`` merged (Paddle 2.x's
    ``paddle.flatten``)."""
    rank = len(x.shape)
    start = start_axis + rank if start_axis < 0 else start_axis
    stop = stop_axis + rank if stop_axis < 0 else stop_axis
    if not 0 <= start <= stop < rank:
        raise ValueError(f"flatten: start_axis {start_axis} and stop_axis {stop_axis} do not fit input "
                         f"'{x.name}' of rank {rank}")
    merged_dims = [int(d) for d in x.shape[start:stop + 1]]
    merged = -1 if any(d < 0 for d in merged_dims) else int(np.prod(merged_dims))
    tail = [int(d) for d in x.shape[stop + 1:]]
    if any(d < 0 for d in tail) or (merged < 0 and start == 0 and stop < rank - 1):
        raise NotImplementedError(f"flatten of '{x.name}' {list(x.shape)}: the dimensions after stop_axis must be "
                                  "known; nearest: stop_axis=-1")
    return _L.reshape(x, [0] * start + [merged] + tail)


class _Activation(Layer):
    _fn = None

    def __init__(self, name: Optional[str] = None):
        super().__init__()
        self._name = name

    def forward(self, x: Variable) -> Variable:
        return type(self)._fn(x)


class ReLU(_Activation):
    """max(x, 0)."""
    _fn = staticmethod(F.relu)


class Sigmoid(_Activation):
    """1 / (1 + exp(-x))."""
    _fn = staticmethod(F.sigmoid)


class Tanh(_Activation):
    """Hyperbolic tangent."""
    _fn = staticmethod(F.tanh)


class ReLU6(_Activation):
    """min(max(x, 0), 6)."""
    _fn = staticmethod(F.relu6)


class Hardswish(_Activation):
    """x * relu6(x + 3) / 6."""
    _fn = staticmethod(F.hardswish)


class Softmax(Layer):
    """Softmax along ``axis``."""

    def __init__(self, axis: int = -1, name: Optional[str] = None):
        super().__init__()
        self._axis = int(axis)

    def forward(self, x: Variable) -> Variable:
        return F.softmax(x, self._axis)


__all__ = ["Linear", "Embedding", "Dropout", "Flatten", "flatten", "ReLU", "Sigmoid", "Tanh", "ReLU6", "Hardswish",
           "Softmax"]
