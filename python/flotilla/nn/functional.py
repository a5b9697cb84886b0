"""Activations and losses with Paddle 2.x names (``paddle.nn.functional``),
those the C++ core has ops for."""

from typing import Optional

from .. import _core
from ..framework import Variable

_L = _core.layers


def relu(x: Variable, name: Optional[str] = None) -> Variable:
    """max(x, 0)."""
    return _L.relu(x)


def sigmoid(x: Variable, name: Optional[str] = None) -> Variable:
    """1 / (1 + exp(-x))."""
    return _L.sigmoid(x)


def tanh(x: Variable, name: Optional[str] = None) -> Variable:
    """Hyperbolic tangent."""
    return _L.tanh(x)


def softmax(x: Variable, axis: int = -1, dtype=None, name: Optional[str] = None) -> Variable:
    """Softmax along ``axis``."""
    return _L.softmax(x, axis)


def linear(x: Variable, weight: Variable, bias: Optional[Variable] = None, name: Optional[str] = None) -> Variable:
    """``x · weight (+ bias)``: weight ``[in_features, out_features]``."""
    return _core.functional.linear(x, weight, bias)


def embedding(x: Variable, weight: Variable, padding_idx: Optional[int] = None, sparse: bool = False,
              name: Optional[str] = None) -> Variable:
    """Rows of ``weight`` for int64 ids ``x``: ``x.shape + [dim]``; rows
    ``padding_idx`` (negative: from the end) are zeros."""
    idx = -1 if padding_idx is None else (padding_idx if padding_idx >= 0 else weight.shape[0] + padding_idx)
    return _core.functional.embedding(x, weight, int(idx), bool(sparse))


def square_error_cost(input: Variable, label: Variable) -> Variable:
    """(input - label)^2 per element."""
    return _L.square_error_cost(input, label)


def _reduce(loss: Variable, reduction: str, fn: str) -> Variable:
    if reduction == "mean":
        return _L.mean(loss)
    if reduction == "sum":
        return _L.reduce_sum(loss, [], False)
    if reduction == "none":
        return loss
    raise ValueError(f"{fn}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def mse_loss(input: Variable, label: Variable, reduction: str = "mean", name=None) -> Variable:
    """Mean squared error."""
    return _reduce(_L.square_error_cost(input, label), reduction, "mse_loss")


def cross_entropy(input: Variable, label: Variable, weight=None, ignore_index: int = -100,
                  reduction: str = "mean", soft_label: bool = False, axis: int = -1,
                  use_softmax: bool = True, name=None) -> Variable:
    """Cross entropy of logits ``input`` (softmax applied) against labels."""
    if weight is not None:
        raise NotImplementedError("paddle.nn.functional.cross_entropy(weight=...) is not in Flotilla")
    if use_softmax:
        loss = _L.softmax_with_cross_entropy(input, label, soft_label, ignore_index)
    else:
        loss = _L.cross_entropy(input, label, soft_label, ignore_index)
    return _reduce(loss, reduction, "cross_entropy")


def softmax_with_cross_entropy(logits: Variable, label: Variable, soft_label: bool = False,
                               ignore_index: int = -100, numeric_stable_mode: bool = True,
                               return_softmax: bool = False, axis: int = -1) -> Variable:
    """Cross entropy of softmax(logits), per row."""
    return _L.softmax_with_cross_entropy(logits, label, soft_label, ignore_index)


def binary_cross_entropy_with_logits(logit: Variable, label: Variable, weight=None, reduction: str = "mean",
                                     pos_weight=None, name=None) -> Variable:
    """Logistic loss of ``logit`` against 0/1 ``label``."""
    if weight is not None or pos_weight is not None:
        raise NotImplementedError("binary_cross_entropy_with_logits(weight/pos_weight) is not in Flotilla")
    return _reduce(_L.sigmoid_cross_entropy_with_logits(logit, label, -100, False), reduction,
                   "binary_cross_entropy_with_logits")


def log_loss(input: Variable, label: Variable, epsilon: float = 1e-4, name=None) -> Variable:
    """Per-element negative log likelihood of probabilities ``input`` against
    labels in [0, 1]: ``-label·log(input+ε) - (1-label)·log(1-input+ε)``."""
    return _L.log_loss(input, label, float(epsilon))


def sigmoid_cross_entropy_with_logits(x: Variable, label: Variable, ignore_index: int = -100, name=None,
                                      normalize: bool = False) -> Variable:
    """Per-element logistic loss."""
    return _L.sigmoid_cross_entropy_with_logits(x, label, ignore_index, normalize)


def softsign(x: Variable, name: Optional[str] = None) -> Variable:
    """x / (1 + |x|)."""
    return _L.softsign(x)


def cosine_similarity(x1: Variable, x2: Variable, axis: int = 1, eps: float = 1e-8) -> Variable:
    """Cosine similarity of the rows of 2-D ``x1`` and ``x2`` (one may have a
    single row): ``[N]``, ``x1·x2 / max(|x1||x2|, eps)``, as Paddle's."""
    if len(x1.shape) != 2 or len(x2.shape) != 2 or axis not in (1, -1):
        raise NotImplementedError("paddle.nn.functional.cosine_similarity of other than 2-D inputs along axis 1 "
                                  "is not in Flotilla; nearest: reshape to [rows, features] first")
    if x1.shape[0] == 1 and x2.shape[0] != 1:
        x1, x2 = x2, x1  # symmetric; the op takes the one-row side as Y
    return _L.reshape(_L.cos_sim(x1, x2, float(eps)), [-1])


# Convolutional networks (conv2d, max_pool2d, batch_norm, ...): cnn_functional.py.
from .cnn_functional import *  # noqa: E402,F401,F403
from ..sequence_lod import sequence_mask  # noqa: E402,F401
