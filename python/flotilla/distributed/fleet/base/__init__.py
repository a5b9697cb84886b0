"""Paddle's ``paddle.distributed.fleet.base``: the role makers and
``util_factory`` (what ``fleet.util`` is)."""

from . import private_helper_function, role_maker, util_factory  # noqa: F401

__all__ = ["private_helper_function", "role_maker", "util_factory"]
