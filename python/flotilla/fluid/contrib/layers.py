"""Paddle 1.x ``fluid.contrib.layers``: ``sparse_embedding`` (the
parameter-server table embedding of ``paddle.static.nn``)."""

from ...static.nn import sparse_embedding  # noqa: F401

__all__ = ["sparse_embedding"]
