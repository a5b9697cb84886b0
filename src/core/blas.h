// OpenBLAS, loaded at first use with the kernels that fit this CPU.
//
// OpenBLAS 0.3.21 (Debian 12) picks its kernels when it is loaded and files
// AVX-512 CPUs from AMD (Zen 4 and later) under Haswell, leaving the AVX-512
// kernels unused — 1.7× slower GEMM on such machines. Flotilla therefore does
// not link OpenBLAS: it sets OPENBLAS_CORETYPE=SkylakeX when the CPU has the
// AVX-512 subsets those kernels use, then dlopen()s the library. A
// user's own OPENBLAS_CORETYPE always wins. Thread-safe; throws Unavailable naming the library
// when it cannot be loaded.
#pragma once

#include <cblas.h>

namespace flotilla::math::internal {

struct BlasApi {
  decltype(&cblas_sgemm) sgemm;
  decltype(&cblas_dgemm) dgemm;
  void (*set_num_threads)(int);
  char* (*get_corename)();
};

const BlasApi& Blas();

}  // namespace flotilla::math::internal
