"""Registers modules under a second dotted name, so ``import
flotilla.fluid.layers`` finds ``flotilla.layers`` itself (one module object,
one set of functions)."""

import sys
from types import ModuleType


def alias(name: str, module: ModuleType) -> ModuleType:
    """Makes ``import name`` return ``module``; returns it."""
    sys.modules.setdefault(name, module)
    return module
