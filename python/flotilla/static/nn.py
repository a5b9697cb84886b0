"""Paddle 2.x ``paddle.static.nn`` layers."""

from typing import Optional, Sequence

from .. import layers as _layers
from ..nn_layers import batch_norm, conv2d, conv2d_transpose, group_norm, layer_norm  # noqa: F401
from ..framework import Variable
from .. import sequence_lod
from .._alias import alias as _alias
from ..sequence_lod import *  # noqa: F401,F403


def fc(x, size: int, num_flatten_dims: int = 1, weight_attr=None, bias_attr=None,
       activation: Optional[str] = None, name: Optional[str] = None) -> Variable:
    """Fully connected: ``activation(x · W + b)``; a list ``x`` sums the products."""
    return _layers.fc(x, size, num_flatten_dims, weight_attr, bias_attr, activation, name=name)


def embedding(input: Variable, size: Sequence[int], is_sparse: bool = False, is_distributed: bool = False,
              padding_idx: Optional[int] = None, param_attr=None, dtype="float32") -> Variable:
    """Rows of a ``[size[0], size[1]]`` table for int64 ids."""
    return _layers.embedding(input, size, is_sparse, is_distributed, padding_idx, param_attr, dtype)


def sparse_embedding(input: Variable, size: Sequence[int], padding_idx: Optional[int] = None,
                     is_test: bool = False, entry=None, table_class: str = "CommonSparseTable",
                     param_attr=None, dtype="float32", slot=None) -> Variable:
    """An embedding whose table lives on the parameter servers, row by row
    (Paddle's large-scale sparse embedding). Every id gets a row at its first
    lookup: ``entry`` may be None or a ShowClickEntry (which admits every id;
    Flotilla's tables keep no show/click counts). Admission by probability or
    count is refused."""
    from ..distributed.entry_attr import EntryAttr, ShowClickEntry
    if entry is not None and not isinstance(entry, ShowClickEntry):
        what = type(entry).__name__ if isinstance(entry, EntryAttr) else repr(entry)
        raise NotImplementedError(f"paddle.static.nn.sparse_embedding(entry={what}) (row admission by "
                                  "probability or count) is not in Flotilla yet; nearest: omit entry or "
                                  "pass a ShowClickEntry (every id gets a row)")
    return _layers.embedding(input, size, True, True, padding_idx, param_attr, dtype)


__all__ = ["fc", "embedding", "sparse_embedding", "conv2d", "conv2d_transpose", "batch_norm", "layer_norm",
           "group_norm"]


_alias(f"{__name__}.sequence_lod", sequence_lod)
