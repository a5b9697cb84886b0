"""Convolutional-network layers with Paddle 1.x's names, arguments and
defaults (``fluid.layers.conv2d``, ``pool2d``, ``batch_norm``, ...), exported
by :mod:`flotilla.layers` (``fluid.layers``); ``conv2d``,
``conv2d_transpose``, ``batch_norm``, ``layer_norm`` and ``group_norm`` are
also ``paddle.static.nn``'s.

Each is a thin wrapper over the C++ layer of the same name
(``flotilla/api/nn_layers.h``): the ops, parameter names, initialisers and
shape checks are the C++ core's, so a network built here is the network
the C++ API builds. Tensors are NCHW; ``data_format="NHWC"`` is refused.

Sizes are an int or ``[h, w]``; paddings an int, ``[h, w]``,
``[top, bottom, left, right]``, per-dimension pairs, or ``"SAME"``/``"VALID"``.
"""

from typing import Optional, Sequence

from . import _core
from .framework import Variable
from .param_attr import to_core

_L = _core.layers

__all__ = ["conv2d", "conv2d_transpose", "pool2d", "adaptive_pool2d", "batch_norm", "layer_norm", "group_norm",
           "dropout", "flatten", "transpose", "pad", "pad2d", "image_resize", "resize_bilinear", "resize_nearest",
           "relu6", "hard_swish", "one_hot", "label_smooth"]


def _nchw(layer: str, data_format: str) -> None:
    if data_format not in ("NCHW", "AnyLayout"):
        raise NotImplementedError(f"{layer}(data_format={data_format!r}): Flotilla's image layers are NCHW; "
                                  "nearest: transpose the input to NCHW (layers.transpose(x, [0, 3, 1, 2]))")


def _act(act: Optional[str]) -> str:
    return act or ""


def conv2d(input: Variable, num_filters: int, filter_size, stride=1, padding=0, dilation=1,
           groups: Optional[int] = None, param_attr=None, bias_attr=None, use_cudnn: bool = True,
           act: Optional[str] = None, name: Optional[str] = None, data_format: str = "NCHW") -> Variable:
    """2-D convolution: ``act(conv(input, W) + b)``.

    W is ``[num_filters, C / groups, kh, kw]``, initialised Normal(0,
    sqrt(2 / (kh * kw * C / groups))) as Paddle does; b is ``[num_filters]``
    (0), left out with ``bias_attr=False``. ``groups == C`` with a multiple
    of C filters is a depthwise convolution. ``use_cudnn`` has no effect
    (CPU kernels)."""
    _nchw("conv2d", data_format)
    return _L.conv2d(input, int(num_filters), filter_size, stride, padding, dilation, int(groups or 1),
                     to_core(param_attr), to_core(bias_attr), _act(act), name or "")


def conv2d_transpose(input: Variable, num_filters: int, output_size=None, filter_size=None, padding=0, stride=1,
                     dilation=1, groups: Optional[int] = None, param_attr=None, bias_attr=None,
                     use_cudnn: bool = True, act: Optional[str] = None, name: Optional[str] = None,
                     data_format: str = "NCHW") -> Variable:
    """Transposed 2-D convolution (the gradient of conv2d). W is ``[C,
    num_filters / groups, kh, kw]``. Without ``filter_size`` it is derived
    from ``output_size``; with both, ``output_size`` picks among the sizes
    the stride allows."""
    _nchw("conv2d_transpose", data_format)
    if output_size is None and filter_size is None:
        raise ValueError("conv2d_transpose: give filter_size or output_size")
    if isinstance(output_size, int):
        output_size = [output_size, output_size]
    return _L.conv2d_transpose(input, int(num_filters), filter_size, [int(s) for s in output_size or []], stride,
                               padding, dilation, int(groups or 1), to_core(param_attr), to_core(bias_attr),
                               _act(act), name or "")


def pool2d(input: Variable, pool_size=-1, pool_type: str = "max", pool_stride=1, pool_padding=0,
           global_pooling: bool = False, use_cudnn: bool = True, ceil_mode: bool = False, name: Optional[str] = None,
           exclusive: bool = True, data_format: str = "NCHW") -> Variable:
    """Max or average pooling (``pool_type`` "max"/"avg"); ``global_pooling``
    pools each whole map to 1x1; ``exclusive`` leaves padding out of averages."""
    _nchw("pool2d", data_format)
    return _L.pool2d(input, pool_size, pool_type, pool_stride, pool_padding, bool(global_pooling),
                     bool(ceil_mode), bool(exclusive), name or "")


def adaptive_pool2d(input: Variable, pool_size, pool_type: str = "max", require_index: bool = False,
                    name: Optional[str] = None) -> Variable:
    """Pools into a ``pool_size`` grid whatever the input's size."""
    if require_index:
        raise NotImplementedError("adaptive_pool2d(require_index=True) (max positions) is not in Flotilla; "
                                  "nearest: adaptive_pool2d without the index")
    return _L.adaptive_pool2d(input, pool_size, pool_type, name or "")


def batch_norm(input: Variable, act: Optional[str] = None, is_test: bool = False, momentum: float = 0.9,
               epsilon: float = 1e-05, param_attr=None, bias_attr=None, data_layout: str = "NCHW",
               in_place: bool = False, name: Optional[str] = None, moving_mean_name: Optional[str] = None,
               moving_variance_name: Optional[str] = None, do_model_average_for_mean_and_var: bool = True,
               use_global_stats: bool = False) -> Variable:
    """Batch normalisation over N, H, W per channel: scale (1) and bias (0)
    are parameters; the moving mean (0) and variance (1) are persistable
    and updated in training. ``act="relu"`` is fused into the op; in a
    ``clone(for_test=True)`` the moving statistics are used."""
    _nchw("batch_norm", data_layout)
    return _L.batch_norm(input, _act(act), bool(is_test), float(momentum), float(epsilon), to_core(param_attr),
                         to_core(bias_attr), name or "", moving_mean_name or "", moving_variance_name or "",
                         bool(use_global_stats))


def layer_norm(input: Variable, scale: bool = True, shift: bool = True, begin_norm_axis: int = 1,
               epsilon: float = 1e-05, param_attr=None, bias_attr=None, act: Optional[str] = None,
               name: Optional[str] = None) -> Variable:
    """Normalises each row of ``input`` flattened at ``begin_norm_axis``."""
    return _L.layer_norm(input, bool(scale), bool(shift), int(begin_norm_axis), float(epsilon), to_core(param_attr),
                         to_core(bias_attr), _act(act))


def group_norm(input: Variable, groups: int, epsilon: float = 1e-05, param_attr=None, bias_attr=None,
               act: Optional[str] = None, data_layout: str = "NCHW", name: Optional[str] = None) -> Variable:
    """Normalises each of ``groups`` channel groups per sample."""
    _nchw("group_norm", data_layout)
    return _L.group_norm(input, int(groups), float(epsilon), to_core(param_attr), to_core(bias_attr), _act(act))


def dropout(x: Variable, dropout_prob: float, is_test: bool = False, seed: Optional[int] = None,
            name: Optional[str] = None, dropout_implementation: str = "downgrade_in_infer") -> Variable:
    """Zeroes elements with probability ``dropout_prob`` in training
    (``downgrade_in_infer`` scales at inference, ``upscale_in_train`` in
    training); off in ``clone(for_test=True)``. A seed makes the masks
    reproducible (and different on every rank)."""
    return _L.dropout(x, float(dropout_prob), bool(is_test), int(seed or 0), dropout_implementation)


def flatten(x: Variable, axis: int = 1, name: Optional[str] = None) -> Variable:
    """``x`` as 2-D: dimensions before ``axis`` times those from it."""
    return _L.flatten(x, int(axis))


def transpose(x: Variable, perm: Sequence[int], name: Optional[str] = None) -> Variable:
    """``x`` with its dimensions permuted by ``perm``."""
    return _L.transpose(x, [int(p) for p in perm])


def pad2d(input: Variable, paddings=(0, 0, 0, 0), mode: str = "constant", pad_value: float = 0.0,
          data_format: str = "NCHW", name: Optional[str] = None) -> Variable:
    """Pads H and W by ``[top, bottom, left, right]``; ``mode`` "constant",
    "reflect" or "edge"."""
    _nchw("pad2d", data_format)
    return _L.pad2d(input, [int(p) for p in paddings], mode, float(pad_value))


def pad(x: Variable, paddings: Sequence[int], pad_value: float = 0.0, name: Optional[str] = None) -> Variable:
    """Constant padding, ``paddings`` = [before_0, after_0, before_1, ...].
    Flotilla pads the last two dimensions of a 4-D tensor (pad2d)."""
    p = [int(v) for v in paddings]
    if len(p) != 8 or any(p[:4]):
        raise NotImplementedError(f"layers.pad(paddings={p}): Flotilla pads H and W of NCHW tensors only; "
                                  "nearest: layers.pad2d(x, [top, bottom, left, right])")
    return _L.pad2d(x, p[4:], "constant", float(pad_value))


def image_resize(input: Variable, out_shape=None, scale: Optional[float] = None, name: Optional[str] = None,
                 resample: str = "BILINEAR", actual_shape=None, align_corners: bool = True, align_mode: int = 1,
                 data_format: str = "NCHW") -> Variable:
    """Resizes H and W to ``out_shape`` ``[h, w]`` (or by ``scale``) with
    ``resample`` "BILINEAR" or "NEAREST"."""
    _nchw("image_resize", data_format)
    if actual_shape is not None:
        raise NotImplementedError("image_resize(actual_shape=...) (a size computed at run time) is not in Flotilla; "
                                  "nearest: a fixed out_shape")
    return _L.image_resize(input, [int(s) for s in out_shape or []], float(scale or 0.0), resample.upper(),
                           bool(align_corners), int(align_mode))


def resize_bilinear(input: Variable, out_shape=None, scale: Optional[float] = None, name: Optional[str] = None,
                    actual_shape=None, align_corners: bool = True, align_mode: int = 1,
                    data_format: str = "NCHW") -> Variable:
    """Bilinear :func:`image_resize`."""
    return image_resize(input, out_shape, scale, name, "BILINEAR", actual_shape, align_corners, align_mode,
                        data_format)


def resize_nearest(input: Variable, out_shape=None, scale: Optional[float] = None, name: Optional[str] = None,
                   actual_shape=None, align_corners: bool = True, data_format: str = "NCHW") -> Variable:
    """Nearest-neighbour :func:`image_resize`."""
    return image_resize(input, out_shape, scale, name, "NEAREST", actual_shape, align_corners, 1, data_format)


def relu6(x: Variable, threshold: float = 6.0, name: Optional[str] = None) -> Variable:
    """min(max(x, 0), threshold)."""
    return _L.relu6(x, float(threshold))


def hard_swish(x: Variable, threshold: float = 6.0, scale: float = 6.0, offset: float = 3.0,
               name: Optional[str] = None) -> Variable:
    """x * min(max(x + offset, 0), threshold) / scale."""
    return _L.hard_swish(x, float(threshold), float(scale), float(offset))


def one_hot(input: Variable, depth: int, allow_out_of_range: bool = False) -> Variable:
    """int64 ids ``[N, 1]`` as float32 ``[N, depth]``; an id outside
    [0, depth) is an error naming it."""
    if allow_out_of_range:
        raise NotImplementedError("one_hot(allow_out_of_range=True) is not in Flotilla; an id outside "
                                  "[0, depth) is an error")
    return _L.one_hot(input, int(depth))


def label_smooth(label: Variable, prior_dist: Optional[Variable] = None, epsilon: float = 0.1,
                 dtype="float32", name: Optional[str] = None) -> Variable:
    """(1 - epsilon) * label + epsilon / C (or epsilon * prior_dist)."""
    return _L.label_smooth(label, float(epsilon), prior_dist)
