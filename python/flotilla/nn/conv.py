"""Paddle 2.x's convolution, pooling and normalisation layers in static
mode: ``Conv2D``, ``MaxPool2D``, ``AvgPool2D``, ``AdaptiveAvgPool2D``,
``AdaptiveMaxPool2D``, ``BatchNorm``, ``BatchNorm1D/2D/3D``, ``LayerNorm``.
Tensors are NCHW; the ops are the C++ core's (``nn.functional``)."""

from typing import Optional

import numpy as np

from .. import initializer as I
from ..nn_layers import _nchw
from ..framework import Variable
from ..param_attr import ParamAttr
from . import functional as F
from .layer import Layer


def _pair(v, what: str):
    if isinstance(v, int):
        return [v, v]
    values = [int(x) for x in v]
    if len(values) != 2:
        raise ValueError(f"Conv2D: {what} must be an int or two ints, got {v!r}")
    return values


class Conv2D(Layer):
    """2-D convolution: weight ``[out_channels, in_channels / groups, kh, kw]``
    (Normal(0, sqrt(2 / (kh * kw * in_channels))), as Paddle's), bias
    ``[out_channels]`` (0; none with ``bias_attr=False``)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, padding_mode: str = "zeros", weight_attr=None, bias_attr=None,
                 data_format: str = "NCHW"):
        super().__init__()
        _nchw("Conv2D", data_format)
        if padding_mode != "zeros":
            raise NotImplementedError(f"Conv2D(padding_mode={padding_mode!r}) is not in Flotilla; nearest: "
                                      "nn.functional.pad(x, ..., mode=...) then Conv2D(padding_mode='zeros')")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv2D: in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                             f"divisible by groups ({groups})")
        self._in_channels, self._out_channels = int(in_channels), int(out_channels)
        self._kernel_size = _pair(kernel_size, "kernel_size")
        self._stride, self._padding, self._dilation, self._groups = stride, padding, dilation, int(groups)
        std = (2.0 / (np.prod(self._kernel_size) * in_channels)) ** 0.5
        self.weight = self.create_parameter([out_channels, in_channels // groups] + self._kernel_size,
                                            attr=weight_attr, default_initializer=I.Normal(0.0, std))
        self.bias = self.create_parameter([out_channels], attr=bias_attr, is_bias=True)

    def forward(self, x: Variable) -> Variable:
        return F.conv2d(x, self.weight, self.bias, self._stride, self._padding, self._dilation, self._groups)

    def extra_repr(self) -> str:
        return f"{self._in_channels}, {self._out_channels}, kernel_size={self._kernel_size}"


class MaxPool2D(Layer):
    """Max pooling; ``stride`` defaults to ``kernel_size``."""

    def __init__(self, kernel_size, stride=None, padding=0, return_mask: bool = False, ceil_mode: bool = False,
                 data_format: str = "NCHW", name: Optional[str] = None):
        super().__init__()
        self._args = (kernel_size, stride, padding, return_mask, ceil_mode, data_format)

    def forward(self, x: Variable) -> Variable:
        return F.max_pool2d(x, *self._args)


class AvgPool2D(Layer):
    """Average pooling; ``exclusive`` leaves padding out of the averages."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, exclusive: bool = True,
                 divisor_override=None, data_format: str = "NCHW", name: Optional[str] = None):
        super().__init__()
        self._args = (kernel_size, stride, padding, ceil_mode, exclusive, divisor_override, data_format)

    def forward(self, x: Variable) -> Variable:
        return F.avg_pool2d(x, *self._args)


class AdaptiveAvgPool2D(Layer):
    """Average pooling into an ``output_size`` grid."""

    def __init__(self, output_size, data_format: str = "NCHW", name: Optional[str] = None):
        super().__init__()
        self._output_size, self._data_format = output_size, data_format

    def forward(self, x: Variable) -> Variable:
        return F.adaptive_avg_pool2d(x, self._output_size, self._data_format)


class AdaptiveMaxPool2D(Layer):
    """Max pooling into an ``output_size`` grid."""

    def __init__(self, output_size, return_mask: bool = False, name: Optional[str] = None):
        super().__init__()
        self._output_size, self._return_mask = output_size, return_mask

    def forward(self, x: Variable) -> Variable:
        return F.adaptive_max_pool2d(x, self._output_size, self._return_mask)


def _statistic_attr(name: Optional[str], value: float) -> ParamAttr:
    return ParamAttr(name=name, initializer=I.Constant(value), trainable=False)


class _BatchNormBase(Layer):
    """Scale ``weight`` (1), shift ``bias`` (0) and the running ``_mean`` (0)
    and ``_variance`` (1), each ``[num_features]``, named ``.w_0``, ``.b_0``,
    ``.w_1``, ``.w_2`` as Paddle's. Training mode normalises by the batch
    and updates the running statistics; ``eval()`` uses them."""

    def __init__(self, num_features: int, momentum: float = 0.9, epsilon: float = 1e-05, weight_attr=None,
                 bias_attr=None, data_format: str = "NCHW", use_global_stats: Optional[bool] = None,
                 name: Optional[str] = None, moving_mean_name: Optional[str] = None,
                 moving_variance_name: Optional[str] = None, dtype: str = "float32"):
        super().__init__(dtype=dtype)
        if data_format not in ("NCHW", "NC", "NCL", "NCDHW"):
            _nchw(type(self).__name__, data_format)
        if weight_attr is False or bias_attr is False:
            raise NotImplementedError(f"{type(self).__name__}(weight_attr=False/bias_attr=False) (no affine "
                                      "parameters) is not in Flotilla; nearest: a fixed ParamAttr(trainable=False)")
        self._num_features = int(num_features)
        self._momentum, self._epsilon, self._use_global_stats = float(momentum), float(epsilon), use_global_stats
        shape = [self._num_features]
        self.weight = self.create_parameter(shape, attr=weight_attr, default_initializer=I.Constant(1.0))
        self.bias = self.create_parameter(shape, attr=bias_attr, is_bias=True)
        self._mean = self.create_parameter(shape, attr=_statistic_attr(moving_mean_name, 0.0))
        self._variance = self.create_parameter(shape, attr=_statistic_attr(moving_variance_name, 1.0))

    def _normalise(self, x: Variable, training: bool) -> Variable:
        return F.batch_norm(x, self._mean, self._variance, self.weight, self.bias, training, self._momentum,
                            self._epsilon, "NCHW", self._use_global_stats)

    def forward(self, input: Variable) -> Variable:
        return self._normalise(input, self.training)

    def extra_repr(self) -> str:
        return f"num_features={self._num_features}, momentum={self._momentum}, epsilon={self._epsilon}"


class BatchNorm1D(_BatchNormBase):
    """Batch normalisation of ``[N, C]`` or ``[N, C, L]`` inputs."""


class BatchNorm2D(_BatchNormBase):
    """Batch normalisation of ``[N, C, H, W]`` inputs."""


class BatchNorm3D(_BatchNormBase):
    """Batch normalisation of ``[N, C, D, H, W]`` inputs."""


class BatchNorm(_BatchNormBase):
    """Paddle's ``paddle.nn.BatchNorm`` (the 1.x-style layer): ``act`` after
    the normalisation; ``is_test=True`` always uses the running statistics."""

    def __init__(self, num_channels: int, act: Optional[str] = None, is_test: bool = False, momentum: float = 0.9,
                 epsilon: float = 1e-05, param_attr=None, bias_attr=None, dtype: str = "float32",
                 data_layout: str = "NCHW", in_place: bool = False, moving_mean_name: Optional[str] = None,
                 moving_variance_name: Optional[str] = None, do_model_average_for_mean_and_var: bool = True,
                 use_global_stats: bool = False, trainable_statistics: bool = False):
        super().__init__(num_channels, momentum, epsilon, param_attr, bias_attr, data_layout,
                         use_global_stats or None, moving_mean_name=moving_mean_name,
                         moving_variance_name=moving_variance_name, dtype=dtype)
        if act not in (None, "relu", "sigmoid", "tanh"):
            raise ValueError(f"BatchNorm: act={act!r} is not supported (None, 'relu', 'sigmoid', 'tanh')")
        self._act, self._is_test = act, bool(is_test)

    def forward(self, input: Variable) -> Variable:
        out = self._normalise(input, self.training and not self._is_test)
        return getattr(F, self._act)(out) if self._act else out


class LayerNorm(Layer):
    """Normalises over the trailing ``normalized_shape`` dimensions; weight
    (1) and bias (0) hold ``prod(normalized_shape)`` values (none with
    ``weight_attr=False`` / ``bias_attr=False``)."""

    def __init__(self, normalized_shape, epsilon: float = 1e-05, weight_attr=None, bias_attr=None,
                 name: Optional[str] = None):
        super().__init__()
        self._normalized_shape = [int(normalized_shape)] if isinstance(normalized_shape, int) else \
            [int(d) for d in normalized_shape]
        self._epsilon = float(epsilon)
        shape = [int(np.prod(self._normalized_shape))]
        self.weight = self.create_parameter(shape, attr=weight_attr, default_initializer=I.Constant(1.0))
        self.bias = self.create_parameter(shape, attr=bias_attr, is_bias=True)

    def forward(self, input: Variable) -> Variable:
        return F.layer_norm(input, self._normalized_shape, self.weight, self.bias, self._epsilon)

    def extra_repr(self) -> str:
        return f"normalized_shape={self._normalized_shape}, epsilon={self._epsilon}"


__all__ = ["Conv2D", "MaxPool2D", "AvgPool2D", "AdaptiveAvgPool2D", "AdaptiveMaxPool2D", "BatchNorm", "BatchNorm1D",
           "BatchNorm2D", "BatchNorm3D", "LayerNorm"]
