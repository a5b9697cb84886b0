"""Paddle's ``paddle.distributed.fleet.base``: the role makers and
``util_factory`` (what ``fleet.util`` is)."""

from . import role_maker, util_factory  # noqa: F401

__all__ = ["role_maker", "util_factory"]
