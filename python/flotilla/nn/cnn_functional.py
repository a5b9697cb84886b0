"""Convolutional-network functions with Paddle 2.x's names
(``paddle.nn.functional.conv2d``, ``max_pool2d``, ``batch_norm``, ...),
exported by :mod:`flotilla.nn.functional`.

Like Paddle's, the functions with weights take them as variables (made with
``paddle.static.create_parameter`` or by another layer) and create none;
the parameter-creating forms are ``paddle.static.nn.conv2d`` and friends
(:mod:`flotilla.nn_layers`). Each wraps a C++ layer
(``flotilla/api/nn_functional.h`` or ``nn_layers.h``). Tensors are NCHW.
"""

from typing import Optional, Sequence

from .. import _core
from ..nn_layers import _nchw
from ..framework import Variable

_L = _core.layers
_F = _core.functional

__all__ = ["conv2d", "conv2d_transpose", "max_pool2d", "avg_pool2d", "adaptive_max_pool2d", "adaptive_avg_pool2d",
           "batch_norm", "layer_norm", "group_norm", "dropout", "relu6", "hardswish", "label_smooth", "one_hot",
           "pad", "interpolate", "upsample"]


def conv2d(x: Variable, weight: Variable, bias: Optional[Variable] = None, stride=1, padding=0, dilation=1,
           groups: int = 1, data_format: str = "NCHW", name: Optional[str] = None) -> Variable:
    """2-D convolution of ``x`` by ``weight`` ``[M, C / groups, kh, kw]``
    (plus ``bias`` ``[M]``)."""
    _nchw("conv2d", data_format)
    return _F.conv2d(x, weight, bias, stride, padding, dilation, int(groups))


def conv2d_transpose(x: Variable, weight: Variable, bias: Optional[Variable] = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1, data_format: str = "NCHW",
                     output_size=None, name: Optional[str] = None) -> Variable:
    """Transposed convolution by ``weight`` ``[C, M / groups, kh, kw]``;
    ``output_padding`` or ``output_size`` picks the output size."""
    _nchw("conv2d_transpose", data_format)
    if isinstance(output_size, int):
        output_size = [output_size, output_size]
    return _F.conv2d_transpose(x, weight, bias, stride, padding, output_padding, int(groups), dilation,
                               [int(s) for s in output_size or []])


def _stride(kernel_size, stride):
    return kernel_size if stride is None else stride


def max_pool2d(x: Variable, kernel_size, stride=None, padding=0, return_mask: bool = False, ceil_mode: bool = False,
               data_format: str = "NCHW", name: Optional[str] = None) -> Variable:
    """Max pooling; ``stride`` defaults to ``kernel_size``."""
    _nchw("max_pool2d", data_format)
    if return_mask:
        raise NotImplementedError("max_pool2d(return_mask=True) is not in Flotilla; nearest: return_mask=False")
    return _L.pool2d(x, kernel_size, "max", _stride(kernel_size, stride), padding, False, bool(ceil_mode), True, "")


def avg_pool2d(x: Variable, kernel_size, stride=None, padding=0, ceil_mode: bool = False, exclusive: bool = True,
               divisor_override=None, data_format: str = "NCHW", name: Optional[str] = None) -> Variable:
    """Average pooling; ``exclusive`` leaves padding out of the averages."""
    _nchw("avg_pool2d", data_format)
    if divisor_override is not None:
        raise NotImplementedError("avg_pool2d(divisor_override=...) is not in Flotilla; nearest: exclusive=False")
    return _L.pool2d(x, kernel_size, "avg", _stride(kernel_size, stride), padding, False, bool(ceil_mode),
                     bool(exclusive), "")


def adaptive_max_pool2d(x: Variable, output_size, return_mask: bool = False, name: Optional[str] = None) -> Variable:
    """Max pooling into an ``output_size`` grid."""
    if return_mask:
        raise NotImplementedError("adaptive_max_pool2d(return_mask=True) is not in Flotilla")
    return _L.adaptive_pool2d(x, output_size, "max", "")


def adaptive_avg_pool2d(x: Variable, output_size, data_format: str = "NCHW", name: Optional[str] = None) -> Variable:
    """Average pooling into an ``output_size`` grid."""
    _nchw("adaptive_avg_pool2d", data_format)
    return _L.adaptive_pool2d(x, output_size, "avg", "")


def batch_norm(x: Variable, running_mean: Variable, running_var: Variable, weight: Variable, bias: Variable,
               training: bool = False, momentum: float = 0.9, epsilon: float = 1e-05, data_format: str = "NCHW",
               use_global_stats: Optional[bool] = None, name: Optional[str] = None) -> Variable:
    """Batch normalisation; in ``training`` by the batch's statistics (and
    ``running_mean``/``running_var`` updated in place), else by the running ones."""
    _nchw("batch_norm", data_format)
    return _F.batch_norm(x, running_mean, running_var, weight, bias, bool(training), float(momentum),
                         float(epsilon), use_global_stats)


def layer_norm(x: Variable, normalized_shape, weight: Optional[Variable] = None, bias: Optional[Variable] = None,
               epsilon: float = 1e-05, name: Optional[str] = None) -> Variable:
    """Normalises over the trailing ``normalized_shape`` dimensions."""
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    return _F.layer_norm(x, [int(s) for s in shape], weight, bias, float(epsilon))


def group_norm(x: Variable, num_groups: int, epsilon: float = 1e-05, weight: Optional[Variable] = None,
               bias: Optional[Variable] = None, data_format: str = "NCHW", name: Optional[str] = None) -> Variable:
    """Normalises each of ``num_groups`` channel groups per sample."""
    _nchw("group_norm", data_format)
    return _F.group_norm(x, int(num_groups), float(epsilon), weight, bias)


def dropout(x: Variable, p: float = 0.5, axis=None, training: bool = True, mode: str = "upscale_in_train",
            name: Optional[str] = None) -> Variable:
    """Zeroes elements with probability ``p`` while training; ``mode``
    "upscale_in_train" (Paddle 2.x's default) or "downscale_in_infer"."""
    if axis is not None:
        raise NotImplementedError("dropout(axis=...) (masks shared along axes) is not in Flotilla; "
                                  "nearest: axis=None")
    implementations = {"upscale_in_train": "upscale_in_train", "downscale_in_infer": "downgrade_in_infer"}
    if mode not in implementations:
        raise ValueError(f"dropout: mode must be 'upscale_in_train' or 'downscale_in_infer', got {mode!r}")
    return _L.dropout(x, float(p), not training, 0, implementations[mode])


def relu6(x: Variable, name: Optional[str] = None) -> Variable:
    """min(max(x, 0), 6)."""
    return _L.relu6(x, 6.0)


def hardswish(x: Variable, name: Optional[str] = None) -> Variable:
    """x * relu6(x + 3) / 6."""
    return _L.hard_swish(x, 6.0, 6.0, 3.0)


def label_smooth(label: Variable, prior_dist: Optional[Variable] = None, epsilon: float = 0.1,
                 name: Optional[str] = None) -> Variable:
    """(1 - epsilon) * label + epsilon / C (or epsilon * prior_dist)."""
    return _L.label_smooth(label, float(epsilon), prior_dist)


def one_hot(x: Variable, num_classes: int, name: Optional[str] = None) -> Variable:
    """int64 ids of any shape as float32 of that shape + ``[num_classes]``."""
    return _F.one_hot(x, int(num_classes))


def pad(x: Variable, pad: Sequence[int], mode: str = "constant", value: float = 0.0, data_format: str = "NCHW",
        name: Optional[str] = None) -> Variable:
    """Pads H and W of an NCHW tensor: ``pad`` = [left, right, top, bottom]
    (Paddle 2.x's order); ``mode`` "constant", "reflect" or "replicate"."""
    _nchw("pad", data_format)
    p = [int(v) for v in pad]
    if len(p) != 4:
        raise NotImplementedError(f"pad(pad={p}): Flotilla pads H and W of 4-D tensors ([left, right, top, "
                                  "bottom]); nearest: a 4-value pad")
    modes = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}
    if mode not in modes:
        raise NotImplementedError(f"pad(mode={mode!r}) is not in Flotilla; nearest: 'constant', 'reflect', "
                                  "'replicate'")
    return _L.pad2d(x, [p[2], p[3], p[0], p[1]], modes[mode], float(value))


def interpolate(x: Variable, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool = False,
                align_mode: int = 0, data_format: str = "NCHW", name: Optional[str] = None) -> Variable:
    """Resizes H and W to ``size`` (or by ``scale_factor``); ``mode``
    "nearest" or "bilinear"."""
    _nchw("interpolate", data_format)
    if mode not in ("nearest", "bilinear"):
        raise NotImplementedError(f"interpolate(mode={mode!r}) is not in Flotilla; nearest: 'bilinear'")
    if isinstance(size, int):
        size = [size, size]
    if isinstance(scale_factor, (list, tuple)):
        if len(set(scale_factor)) != 1:
            raise NotImplementedError("interpolate: one scale_factor for H and W in Flotilla")
        scale_factor = scale_factor[0]
    return _L.image_resize(x, [int(s) for s in size or []], float(scale_factor or 0.0), mode.upper(),
                           bool(align_corners), int(align_mode))


upsample = interpolate
