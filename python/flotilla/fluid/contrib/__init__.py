"""Paddle 1.x ``fluid.contrib``: the layers PS models use."""

from . import layers  # noqa: F401
