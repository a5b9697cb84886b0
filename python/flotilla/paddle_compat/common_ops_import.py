"""Paddle's ``paddle.common_ops_import`` (scripts reach ``core`` through it)."""

from ..fluid import core  # noqa: F401
from ..framework import Variable, default_main_program  # noqa: F401
