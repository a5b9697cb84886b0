// Math kernels shared by ops, the parameter server and collectives.
// GEMM goes through Flotilla's own OpenBLAS instance (flotilla/core/blas.h
// says which kernels and why); everything else is plain loops that the
// compiler vectorises. All functions are thread-safe on distinct outputs.
#pragma once

#include <cstdint>
#include <string>

#include "flotilla/core/dims.h"

namespace flotilla::math {

// C[M,N] = alpha * op(A) * op(B) + beta * C, row-major; op = transpose when
// trans_* is set. Leading dimensions are those of the stored matrices.
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
          int64_t ldc);
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc);
// Integer GEMM falls back to loops (rarely used; for completeness of dtypes).
template <typename T>
void GemmNaive(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
               int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// Limits BLAS to `n` threads for this process (benchmarks use 1).
void SetBlasThreads(int n);
// The kernel set OpenBLAS runs ("SkylakeX", "Haswell", ...): blas::KernelInfo().core.
std::string BlasCoreName();

// Paddle's elementwise broadcasting: Y's dims match a contiguous run of X's
// dims starting at `axis` (axis = -1 → aligned to the trailing dims; trailing
// 1s of Y are ignored). X is viewed as [pre, n, post] and Y as [n].
struct BroadcastShape {
  int64_t pre = 1;
  int64_t n = 1;
  int64_t post = 1;
};
// Throws InvalidArgument naming both shapes when Y cannot broadcast to X.
BroadcastShape ComputeBroadcast(const Dims& x, const Dims& y, int axis);

// y += alpha * x
template <typename T> void Axpy(int64_t n, T alpha, const T* x, T* y);
// y = alpha * x
template <typename T> void Scale(int64_t n, T alpha, const T* x, T* y);
// y = x1 + x2
template <typename T> void Add(int64_t n, const T* x1, const T* x2, T* y);

}  // namespace flotilla::math
