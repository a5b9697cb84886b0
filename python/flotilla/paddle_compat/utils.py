"""Paddle's ``paddle.utils``: ``unique_name``."""

from ..fluid import unique_name  # noqa: F401
