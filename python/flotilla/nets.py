"""Composite layers (Paddle's ``fluid.nets``)."""

from typing import Optional

from . import sequence_lod
from .framework import Variable


def sequence_conv_pool(input: Variable, num_filters: int, filter_size: int, param_attr=None,
                       act: Optional[str] = "sigmoid", pool_type: str = "max", bias_attr=None) -> Variable:
    """``sequence_pool(sequence_conv(input), pool_type)``: a text CNN's
    convolution over each sequence, then one row per sequence."""
    conv = sequence_lod.sequence_conv(input, num_filters, filter_size, param_attr=param_attr,
                                      bias_attr=bias_attr, act=act)
    return sequence_lod.sequence_pool(conv, pool_type)


__all__ = ["sequence_conv_pool"]
