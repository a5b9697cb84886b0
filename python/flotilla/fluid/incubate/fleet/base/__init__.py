"""Paddle 1.x ``fluid.incubate.fleet.base``: the role makers."""

from ....._alias import alias as _alias
from .....distributed.fleet.base import role_maker  # noqa: F401

_alias(f"{__name__}.role_maker", role_maker)

__all__ = ["role_maker"]
