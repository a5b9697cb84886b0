// The math backend: which BLAS library Flotilla's GEMMs run on, and which of
// its kernels.
//
// Flotilla runs OpenBLAS, but its own instance: the library is loaded into a
// link-map namespace of its own (dlmopen), started with the core type that
// this CPU's features call for. A process that imported NumPy or PyTorch
// first, which loaded the system's OpenBLAS with whatever kernels its model
// table or the OPENBLAS_CORETYPE variable gave, therefore runs Flotilla's
// GEMMs on the same kernels as a C++ process. OPENBLAS_CORETYPE is left to
// those other users of the library; FLOTILLA_BLAS_CORETYPE overrides the
// choice for Flotilla's instance. OPENBLAS_NUM_THREADS (else OMP_NUM_THREADS,
// else one per core) sets its threads, as for any OpenBLAS.
// docs/framework.md ("Math backend") has the measurements behind the choice.
#pragma once

#include <string>

namespace flotilla::blas {

// The x86 vector extensions that both this CPU and the operating system
// enable (CPUID and XCR0), as far as GEMM kernels use them.
struct CpuFeatures {
  bool sse3 = false;
  bool avx = false;
  bool fma = false;
  bool avx2 = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512cd = false;

  // Every AVX-512 subset OpenBLAS's SkylakeX kernels use.
  bool avx512_skylakex() const { return avx512f && avx512bw && avx512vl && avx512dq && avx512cd; }
  // "AVX-512 (F BW VL DQ CD) FMA AVX2 AVX SSE3"; "none" without any of them.
  std::string ToString() const;
};

// This CPU's features; all false off x86-64. Thread-safe.
CpuFeatures DetectCpuFeatures();

// The OpenBLAS core type whose kernels suit `f`, from features alone:
// AVX-512 (F BW VL DQ CD) → "SkylakeX", AVX2 + FMA → "Haswell",
// AVX → "Sandybridge", SSE3 → "Prescott"; "" without any (OpenBLAS decides).
std::string OpenBlasCoreFor(const CpuFeatures& f);

// What Flotilla's GEMMs run on in this process.
struct Kernels {
  std::string library;    // "OpenBLAS 0.3.21"
  std::string core;       // the kernels the library reports running: "SkylakeX"
  std::string chosen_by;  // "CPU features", or "FLOTILLA_BLAS_CORETYPE"
  std::string cpu;        // CpuFeatures::ToString() of this CPU
  bool private_instance = false;  // in a namespace of its own (false: shared with the process)
  int threads = 0;                // the library's thread count at the time of the call

  // One line: "OpenBLAS 0.3.21, SkylakeX kernels (by CPU features: ...), private instance, 1 thread".
  std::string ToString() const;
};

// Loads the backend on first use; every call gives the same answer but for
// `threads`. Thread-safe; throws Unavailable naming the library when it cannot be loaded.
Kernels KernelInfo();

}  // namespace flotilla::blas
