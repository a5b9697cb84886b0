// The PyTorch peers' configuration: PyTorch at its best on this CPU. Its
// GEMMs run on the system's OpenBLAS, whose own CPU table may not know this
// CPU (then it falls back to old kernels, or to an OPENBLAS_CORETYPE the
// environment set for other programs); its own vector kernels default to
// AVX2 even where AVX-512 is faster. The peer is started with the OpenBLAS
// core type Flotilla's GEMMs run on, and ATEN_CPU_CAPABILITY at the widest
// extension the CPU has, so both sides run the same class of kernels.
// Header-only; each bench is one translation unit.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "flotilla/core/blas.h"

namespace flotilla::bench {

// ATEN_CPU_CAPABILITY for this CPU: "avx512", "avx2" or "default".
inline std::string TorchCpuCapability() {
  const blas::CpuFeatures f = blas::DetectCpuFeatures();
  if (f.avx512_skylakex()) return "avx512";
  return f.avx2 && f.fma ? "avx2" : "default";
}

// "OMP_NUM_THREADS=n OPENBLAS_CORETYPE=... ATEN_CPU_CAPABILITY=... " for a
// shell command line starting a PyTorch peer with `threads` threads.
inline std::string TorchPeerEnv(int threads) {
  return "OMP_NUM_THREADS=" + std::to_string(threads) + " OPENBLAS_CORETYPE=" + blas::KernelInfo().core +
         " ATEN_CPU_CAPABILITY=" + TorchCpuCapability() + " ";
}

// The kernels each side ran, for a bench's JSON line.
inline nlohmann::json KernelsJson() {
  const blas::Kernels k = blas::KernelInfo();
  return {{"flotilla_blas", k.core}, {"pytorch_blas", k.core}, {"pytorch_aten", TorchCpuCapability()},
          {"cpu", k.cpu}};
}

}  // namespace flotilla::bench
