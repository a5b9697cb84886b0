"""Paddle's ``fluid.InferenceTranspiler``: graph rewrites that speed up
inference (batch_norm folded into conv2d, conv + relu fused, ...) without
changing results. Flotilla runs a program's ops as built, so ``transpile``
leaves the program as it is (the results are those the rewrite preserves)
and says so once."""

import warnings
from typing import Any, Optional

from .framework import Program

_warned = False


class InferenceTranspiler:
    """See the module docstring."""

    def transpile(self, program: Program, place: Any, scope: Any = None) -> None:
        """Checks ``program`` and leaves it unchanged (one warning per process)."""
        global _warned
        if not isinstance(program, Program):
            raise TypeError(f"InferenceTranspiler.transpile: program must be a Program, got "
                            f"{type(program).__name__}")
        if not _warned:
            _warned = True
            warnings.warn("InferenceTranspiler.transpile has no effect in Flotilla: the program's ops run as "
                          "built (batch_norm is not folded into conv2d); results are the same", RuntimeWarning,
                          stacklevel=2)

    def float16_transpile(self, program: Program, place: Any, scope: Optional[Any] = None) -> None:
        """Not in Flotilla: its CPU kernels compute in float32/float64."""
        raise NotImplementedError("InferenceTranspiler.float16_transpile (float16 inference on CUDA) is not in "
                                  "Flotilla; nearest: the float32 program as it is")


__all__ = ["InferenceTranspiler"]
