"""The PyTorch peers' configuration in the Python benches: PyTorch at its
best on this CPU, as bench/torch_peer.h gives it to the C++ benches — the
OpenBLAS core type Flotilla's GEMMs run on, and ATEN_CPU_CAPABILITY at the
widest extension the CPU has (PyTorch 1.13 defaults to AVX2)."""

from typing import Dict

import flotilla


def torch_capability() -> str:
    """ATEN_CPU_CAPABILITY for this CPU: avx512, avx2 or default."""
    cpu = flotilla._core.blas_kernels()["cpu"]
    if cpu.startswith("AVX-512 (F BW VL DQ CD)"):
        return "avx512"
    return "avx2" if "AVX2" in cpu and "FMA" in cpu else "default"


def torch_peer_env(threads: int) -> Dict[str, str]:
    """Environment variables for a PyTorch peer process with ``threads`` threads."""
    return {"OMP_NUM_THREADS": str(threads), "OPENBLAS_CORETYPE": flotilla._core.blas_kernels()["core"],
            "ATEN_CPU_CAPABILITY": torch_capability()}
