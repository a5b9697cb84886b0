"""Composite layers (Paddle's ``fluid.nets``)."""

from typing import Optional

from . import nn_layers, sequence_lod
from .framework import Variable


def sequence_conv_pool(input: Variable, num_filters: int, filter_size: int, param_attr=None,
                       act: Optional[str] = "sigmoid", pool_type: str = "max", bias_attr=None) -> Variable:
    """``sequence_pool(sequence_conv(input), pool_type)``: a text CNN's
    convolution over each sequence, then one row per sequence."""
    conv = sequence_lod.sequence_conv(input, num_filters, filter_size, param_attr=param_attr,
                                      bias_attr=bias_attr, act=act)
    return sequence_lod.sequence_pool(conv, pool_type)


def simple_img_conv_pool(input: Variable, num_filters: int, filter_size, pool_size, pool_stride,
                         pool_padding=0, pool_type: str = "max", global_pooling: bool = False, conv_stride=1,
                         conv_padding=0, conv_dilation=1, conv_groups: int = 1, param_attr=None, bias_attr=None,
                         act: Optional[str] = None, use_cudnn: bool = True) -> Variable:
    """``pool2d(conv2d(input))``: one convolution (with ``act``) followed by
    one pooling, as Paddle's ``fluid.nets.simple_img_conv_pool``."""
    conv = nn_layers.conv2d(input, num_filters, filter_size, stride=conv_stride, padding=conv_padding,
                            dilation=conv_dilation, groups=conv_groups, param_attr=param_attr,
                            bias_attr=bias_attr, act=act)
    return nn_layers.pool2d(conv, pool_size=pool_size, pool_type=pool_type, pool_stride=pool_stride,
                            pool_padding=pool_padding, global_pooling=global_pooling)


def img_conv_group(input: Variable, conv_num_filter, pool_size, conv_padding=1, conv_filter_size=3,
                   conv_act: Optional[str] = None, param_attr=None, conv_with_batchnorm=False,
                   conv_batchnorm_drop_rate=0.0, pool_stride=1, pool_type: str = "max",
                   use_cudnn: bool = True) -> Variable:
    """A VGG block: convolutions (each optionally followed by batch_norm and
    dropout), then one pooling, as Paddle's ``fluid.nets.img_conv_group``.
    Per-convolution settings are a value or a list of one per filter count."""
    n = len(conv_num_filter)

    def each(value):
        value = list(value) if isinstance(value, (list, tuple)) else [value] * n
        if len(value) != n:
            raise ValueError(f"img_conv_group: {len(value)} settings for {n} convolutions")
        return value

    paddings, sizes, attrs = each(conv_padding), each(conv_filter_size), each(param_attr)
    with_bn, drops = each(conv_with_batchnorm), each(conv_batchnorm_drop_rate)
    tmp = input
    for i in range(n):
        act = None if with_bn[i] else conv_act
        tmp = nn_layers.conv2d(tmp, conv_num_filter[i], sizes[i], padding=paddings[i], param_attr=attrs[i],
                               act=act)
        if with_bn[i]:
            tmp = nn_layers.batch_norm(tmp, act=conv_act)
            if abs(drops[i]) > 1e-5:
                tmp = nn_layers.dropout(tmp, dropout_prob=drops[i])
    return nn_layers.pool2d(tmp, pool_size=pool_size, pool_type=pool_type, pool_stride=pool_stride)


__all__ = ["sequence_conv_pool", "simple_img_conv_pool", "img_conv_group"]
