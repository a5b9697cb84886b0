"""Places: where a program runs. Flotilla runs on the CPU; the Place seam in
the C++ core keeps room for a GPU backend."""

import warnings

_compat_mode = False
_warned_cuda = False


class CPUPlace:
    """The host CPU (Paddle's ``fluid.CPUPlace()``)."""

    def __repr__(self) -> str:
        return "CPUPlace"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CPUPlace)

    def __hash__(self) -> int:
        return hash("CPUPlace")


class CUDAPlace(CPUPlace):
    """A GPU place. Flotilla has no GPU backend yet: under the Paddle
    compatibility switch this runs on the CPU with one warning; otherwise it
    raises ``NotImplementedError``."""

    def __init__(self, device_id: int = 0):
        global _warned_cuda
        if not _compat_mode:
            raise NotImplementedError(
                f"CUDAPlace({device_id}): Flotilla has no GPU backend yet; use flotilla.CPUPlace()")
        if not _warned_cuda:
            warnings.warn(f"CUDAPlace({device_id}) runs on the CPU: Flotilla has no GPU backend yet",
                          RuntimeWarning, stacklevel=2)
            _warned_cuda = True
        self.device_id = device_id

    def __repr__(self) -> str:
        return f"CUDAPlace({self.device_id}) (on CPU)"


def set_compat_mode(on: bool) -> None:
    """Called by flotilla.paddle_compat: Paddle scripts may ask for GPUs."""
    global _compat_mode
    _compat_mode = on


def is_compiled_with_cuda() -> bool:
    """False: Flotilla runs on CPUs (Paddle's ``fluid.is_compiled_with_cuda``)."""
    return False


def cuda_places(device_ids=None):
    """Paddle's ``fluid.cuda_places``: CPU places under the compatibility switch."""
    ids = device_ids if device_ids is not None else [0]
    return [CUDAPlace(i) for i in ids]


def cpu_places(device_count: int = 1):
    """Paddle's ``fluid.cpu_places``."""
    return [CPUPlace() for _ in range(device_count)]
