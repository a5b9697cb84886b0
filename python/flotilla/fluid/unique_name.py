"""Paddle's ``fluid.unique_name``: generated names and the guard that restarts them."""

from ..framework import unique_name as generate  # noqa: F401
from ..framework import unique_name_guard as guard  # noqa: F401

__all__ = ["generate", "guard"]
