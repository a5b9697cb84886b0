#include "comm/reduce_kernels.h"

#include <algorithm>

namespace flotilla::comm {
namespace {

template <typename T, typename F>
void Apply(T* dst, const T* a, const T* b, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) dst[i] = f(a[i], b[i]);
}

template <typename T>
void ReduceTyped(T* dst, const T* a, const T* b, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return Apply(dst, a, b, n, [](T x, T y) { return x + y; });
    case ReduceOp::kMax:
      return Apply(dst, a, b, n, [](T x, T y) { return std::max(x, y); });
    case ReduceOp::kMin:
      return Apply(dst, a, b, n, [](T x, T y) { return std::min(x, y); });
    case ReduceOp::kProd:
      return Apply(dst, a, b, n, [](T x, T y) { return x * y; });
  }
}

}  // namespace

void ReduceInto(void* dst, const void* a, const void* b, size_t count, DType dtype, ReduceOp op) {
  VisitDType(dtype, [&]<typename T>() {
    ReduceTyped(static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), count,
                op);
  });
}

void DivideBy(void* data, size_t count, DType dtype, int divisor) {
  if (divisor == 1) return;
  VisitDType(dtype, [&]<typename T>() {
    T* p = static_cast<T*>(data);
    const T d = static_cast<T>(divisor);
    for (size_t i = 0; i < count; ++i) p[i] /= d;
  });
}

}  // namespace flotilla::comm
