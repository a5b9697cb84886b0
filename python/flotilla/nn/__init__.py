"""Paddle 2.x ``paddle.nn`` in static mode: ``nn.Layer`` and its common
layers (``Linear``, ``Embedding``, ``Conv2D``, ``BatchNorm2D``, ...), the
containers (``Sequential``, ``LayerList``, ``ParameterList``),
``nn.functional`` (activations, losses) and ``nn.initializer``."""

from .. import initializer  # noqa: F401
from .._alias import alias as _alias
from ..param_attr import ParamAttr  # noqa: F401
from . import functional  # noqa: F401
from .layer import Layer, LayerList, ParameterList, Sequential  # noqa: F401
from .common import (Dropout, Embedding, Flatten, Hardswish, Linear, ReLU, ReLU6, Sigmoid, Softmax,  # noqa: F401
                     Tanh)
from .conv import (AdaptiveAvgPool2D, AdaptiveMaxPool2D, AvgPool2D, BatchNorm, BatchNorm1D,  # noqa: F401
                   BatchNorm2D, BatchNorm3D, Conv2D, LayerNorm, MaxPool2D)

_alias(f"{__name__}.initializer", initializer)

__all__ = ["functional", "initializer", "ParamAttr", "Layer", "LayerList", "ParameterList", "Sequential", "Linear",
           "Embedding", "Dropout", "Flatten", "ReLU", "ReLU6", "Sigmoid", "Tanh", "Hardswish", "Softmax", "Conv2D",
           "MaxPool2D", "AvgPool2D", "AdaptiveAvgPool2D", "AdaptiveMaxPool2D", "BatchNorm", "BatchNorm1D",
           "BatchNorm2D", "BatchNorm3D", "LayerNorm"]
