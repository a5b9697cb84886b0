"""Paddle's ``paddle.distributed.fleet.base``: the role makers."""

from . import role_maker  # noqa: F401

__all__ = ["role_maker"]
