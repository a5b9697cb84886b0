#include "flotilla/core/math.h"

#include "core/blas.h"
#include "flotilla/common/enforce.h"

namespace flotilla::math {

namespace {
CBLAS_TRANSPOSE Trans(bool t) { return t ? CblasTrans : CblasNoTrans; }
}  // namespace

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
          const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
          int64_t ldc) {
  if (m == 0 || n == 0) return;
  internal::Blas().sgemm(CblasRowMajor, Trans(trans_a), Trans(trans_b), m, n, k, alpha, a, lda, b, ldb,
              beta, c, ldc);
}

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
          const double* a, int64_t lda, const double* b, int64_t ldb, double beta, double* c,
          int64_t ldc) {
  if (m == 0 || n == 0) return;
  internal::Blas().dgemm(CblasRowMajor, Trans(trans_a), Trans(trans_b), m, n, k, alpha, a, lda, b, ldb,
              beta, c, ldc);
}

template <typename T>
void GemmNaive(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
               int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        T av = trans_a ? a[p * lda + i] : a[i * lda + p];
        T bv = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        acc += av * bv;
      }
      c[i * ldc + j] = alpha * acc + (beta == T(0) ? T(0) : beta * c[i * ldc + j]);
    }
  }
}

template void GemmNaive<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*,
                               int64_t, const float*, int64_t, float, float*, int64_t);
template void GemmNaive<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*,
                                int64_t, const double*, int64_t, double, double*, int64_t);
template void GemmNaive<int32_t>(bool, bool, int64_t, int64_t, int64_t, int32_t, const int32_t*,
                                 int64_t, const int32_t*, int64_t, int32_t, int32_t*, int64_t);
template void GemmNaive<int64_t>(bool, bool, int64_t, int64_t, int64_t, int64_t, const int64_t*,
                                 int64_t, const int64_t*, int64_t, int64_t, int64_t*, int64_t);

void SetBlasThreads(int n) { internal::Blas().set_num_threads(n); }

std::string BlasCoreName() { return blas::KernelInfo().core; }

BroadcastShape ComputeBroadcast(const Dims& x, const Dims& y, int axis) {
  Dims ys = y;
  while (ys.size() > 1 && ys.back() == 1) ys.pop_back();
  if (ys.size() == 1 && ys[0] == 1 && x.size() > 0) {
    // A scalar-like Y broadcasts everywhere.
    return {Numel(x), 1, 1};
  }
  int xr = static_cast<int>(x.size());
  int yr = static_cast<int>(ys.size());
  if (axis < 0) axis = xr - static_cast<int>(y.size());
  FLOTILLA_ENFORCE(axis >= 0 && axis + yr <= xr, "cannot broadcast Y of shape ", DimsToString(y),
                   " to X of shape ", DimsToString(x), " at axis ", axis);
  for (int i = 0; i < yr; ++i) {
    FLOTILLA_ENFORCE(x[axis + i] == ys[i], "cannot broadcast Y of shape ", DimsToString(y),
                     " to X of shape ", DimsToString(x), " at axis ", axis, ": dim ", i,
                     " is ", ys[i], " but X has ", x[axis + i]);
  }
  BroadcastShape b;
  b.pre = Product(x, 0, axis);
  b.n = Product(x, axis, axis + yr);
  b.post = Product(x, axis + yr, xr);
  return b;
}

template <typename T> void Axpy(int64_t n, T alpha, const T* x, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}
template <typename T> void Scale(int64_t n, T alpha, const T* x, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = alpha * x[i];
}
template <typename T> void Add(int64_t n, const T* x1, const T* x2, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = x1[i] + x2[i];
}

#define FLOTILLA_INSTANTIATE(T)                              \
  template void Axpy<T>(int64_t, T, const T*, T*);           \
  template void Scale<T>(int64_t, T, const T*, T*);          \
  template void Add<T>(int64_t, const T*, const T*, T*);
FLOTILLA_INSTANTIATE(float)
FLOTILLA_INSTANTIATE(double)
FLOTILLA_INSTANTIATE(int32_t)
FLOTILLA_INSTANTIATE(int64_t)
#undef FLOTILLA_INSTANTIATE

}  // namespace flotilla::math
