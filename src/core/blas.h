// OpenBLAS, loaded at first use with the kernels that fit this CPU.
//
// OpenBLAS picks its kernels once, when it is loaded, from OPENBLAS_CORETYPE
// or a table of CPU models; OpenBLAS 0.3.21 (Debian 12) runs its SSE3
// (Prescott) kernels on CPUs newer than its table, and files AMD's AVX-512
// CPUs under Haswell. In a Python process NumPy has loaded it already, so
// the process's one instance carries NumPy's kernels. Flotilla therefore
// does not link OpenBLAS: it loads an instance of its own into a new
// link-map namespace (dlmopen), whose C library sees OPENBLAS_CORETYPE set
// from the CPU's features (flotilla/core/blas.h says which); when no
// namespace can be made it falls back to the shared instance. Thread-safe;
// throws Unavailable naming the library when it cannot be loaded.
#pragma once

#include <cblas.h>

#include <string>

#include "flotilla/core/blas.h"

namespace flotilla::math::internal {

struct BlasApi {
  decltype(&cblas_sgemm) sgemm;
  decltype(&cblas_dgemm) dgemm;
  void (*set_num_threads)(int);
  int (*get_num_threads)();
  char* (*get_corename)();
  blas::Kernels kernels;       // as loaded (core and threads are read live)
  std::string requested_core;  // the OPENBLAS_CORETYPE it was started with; "" for none
};

const BlasApi& Blas();

}  // namespace flotilla::math::internal
