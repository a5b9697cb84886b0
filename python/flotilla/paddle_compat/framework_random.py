"""Paddle's ``paddle.framework.random``: seeding the static programs."""

from .. import framework


def _manual_program_seed(seed: int) -> None:
    """Seeds the initialisers and random ops of the default main and startup
    programs (their ``random_seed``), as Paddle's does."""
    framework.default_main_program().random_seed = int(seed)
    framework.default_startup_program().random_seed = int(seed)


def seed(seed: int) -> None:
    """``paddle.seed``: the same as :func:`_manual_program_seed` in static mode."""
    _manual_program_seed(seed)


__all__ = ["seed"]
