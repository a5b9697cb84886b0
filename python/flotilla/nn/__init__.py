"""Paddle 2.x ``paddle.nn`` names that apply to static programs:
``nn.functional`` (activations, losses) and ``nn.initializer``."""

from .. import initializer  # noqa: F401
from .._alias import alias as _alias
from . import functional  # noqa: F401

_alias(f"{__name__}.initializer", initializer)

__all__ = ["functional", "initializer"]
