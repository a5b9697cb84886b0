"""Metrics on static programs (Paddle's ``paddle.metric`` /
``paddle.static`` functions): top-k accuracy and streaming ROC AUC, computed
by the C++ core's ops."""

from typing import Optional

from . import layers as _layers
from .framework import Variable


def accuracy(input: Variable, label: Variable, k: int = 1, correct=None, total=None,
             name: Optional[str] = None) -> Variable:
    """Top-k accuracy of class scores ``input`` against int64 ``label``: a [1] variable."""
    return _layers.accuracy(input, label, k, correct, total)


def auc(input: Variable, label: Variable, curve: str = "ROC", num_thresholds: int = 4095, topk: int = 1,
        slide_steps: int = 1):
    """Streaming ROC AUC; returns ``(auc, batch_auc, [states...])`` as Paddle's
    ``fluid.layers.auc`` (see :func:`flotilla.layers.auc`)."""
    return _layers.auc(input, label, curve, num_thresholds, topk, slide_steps)


__all__ = ["accuracy", "auc"]
