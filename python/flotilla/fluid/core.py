"""Paddle's ``fluid.core``: the names scripts take from the C++ core."""

from ..errors import EOFException  # noqa: F401
from ..place import CPUPlace, CUDAPlace, is_compiled_with_cuda  # noqa: F401
import enum
from typing import Any

import numpy as np

from .. import _core

Scope = _core.Scope
LoDTensor = _core.Tensor
Tensor = _core.Tensor


def get_cuda_device_count() -> int:
    """0: Flotilla runs on CPUs."""
    return 0


def supports_bfloat16() -> bool:
    """False: Flotilla's CPU kernels compute in float32/float64 only."""
    return False


def is_compiled_with_mkldnn() -> bool:
    """False: Flotilla's CPU kernels are its own (BLAS for GEMM), not oneDNN."""
    return False


def is_compiled_with_xpu() -> bool:
    """False: Flotilla has no XPU backend."""
    return False


class VarDesc:
    """Paddle's ``core.VarDesc``: only its ``VarType`` enum."""

    class VarType(str, enum.Enum):
        """Paddle's variable types. The data types are their dtype names
        (``VarType.FP32 == "float32"``), so they compare equal to what
        ``Tensor._dtype()`` and ``Variable.dtype`` give and are accepted
        wherever a dtype name is."""

        BOOL = "bool"
        INT16 = "int16"
        INT32 = "int32"
        INT64 = "int64"
        FP16 = "float16"
        FP32 = "float32"
        FP64 = "float64"
        UINT8 = "uint8"
        INT8 = "int8"
        BF16 = "bfloat16"
        COMPLEX64 = "complex64"
        COMPLEX128 = "complex128"
        LOD_TENSOR = "lod_tensor"
        SELECTED_ROWS = "selected_rows"
        LOD_TENSOR_ARRAY = "lod_tensor_array"
        FEED_MINIBATCH = "feed_minibatch"
        FETCH_LIST = "fetch_list"
        STEP_SCOPES = "step_scopes"
        READER = "reader"
        RAW = "raw"

        def __str__(self) -> str:
            return str(self.value)


class _DLPackCapsule:
    """A DLPack capsule as the producer object ``numpy.from_dlpack`` takes."""

    def __init__(self, capsule: Any):
        self._capsule = capsule

    def __dlpack__(self, stream: Any = None) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple:
        return (1, 0)  # kDLCPU, device 0


def from_dlpack(dltensor: Any) -> Tensor:
    """A Tensor from a DLPack capsule of CPU memory (``Tensor._to_dlpack()``,
    ``torch.utils.dlpack.to_dlpack``, ...); the capsule is consumed. Raises
    TypeError for memory that is not on the CPU."""
    try:
        array = np.from_dlpack(_DLPackCapsule(dltensor))
    except (RuntimeError, BufferError) as e:
        raise TypeError(f"from_dlpack: {e} (Flotilla reads CPU memory only)") from e
    return _core.as_tensor(np.array(array))


__all__ = ["VarDesc", "from_dlpack", "supports_bfloat16", "is_compiled_with_mkldnn", "is_compiled_with_xpu", "EOFException", "CPUPlace", "CUDAPlace", "is_compiled_with_cuda", "Scope", "LoDTensor", "Tensor",
           "get_cuda_device_count"]
