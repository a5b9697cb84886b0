"""Paddle's ``fluid.core``: the names scripts take from the C++ core."""

from ..errors import EOFException  # noqa: F401
from ..place import CPUPlace, CUDAPlace, is_compiled_with_cuda  # noqa: F401
from .. import _core

Scope = _core.Scope
LoDTensor = _core.Tensor
Tensor = _core.Tensor


def get_cuda_device_count() -> int:
    """0: Flotilla runs on CPUs."""
    return 0


__all__ = ["EOFException", "CPUPlace", "CUDAPlace", "is_compiled_with_cuda", "Scope", "LoDTensor", "Tensor",
           "get_cuda_device_count"]
