// Element types of tensors. The numeric values match Paddle's VarType codes
// for the types Flotilla supports, so saved programs read the same.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace flotilla {

enum class DType : int {
  kInt32 = 2,
  kInt64 = 3,
  kFloat32 = 5,
  kFloat64 = 6,
};

size_t SizeOf(DType dtype);
// "float32", "float64", "int32", "int64".
const char* DTypeName(DType dtype);
// Accepts the names above (and "float", "double", "int", "long"); throws
// InvalidArgument naming the string otherwise.
DType ParseDType(const std::string& name);

template <typename T> constexpr DType DTypeOf();
template <> constexpr DType DTypeOf<float>() { return DType::kFloat32; }
template <> constexpr DType DTypeOf<double>() { return DType::kFloat64; }
template <> constexpr DType DTypeOf<int32_t>() { return DType::kInt32; }
template <> constexpr DType DTypeOf<int64_t>() { return DType::kInt64; }

// Calls fn.template operator()<T>() with the C++ type of `dtype`:
//   VisitDType(t.dtype(), [&]<typename T>() { Fill<T>(t); });
template <typename Fn>
decltype(auto) VisitDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32: return fn.template operator()<float>();
    case DType::kFloat64: return fn.template operator()<double>();
    case DType::kInt32: return fn.template operator()<int32_t>();
    case DType::kInt64: return fn.template operator()<int64_t>();
  }
  return fn.template operator()<float>();
}

// Like VisitDType but only for float32/float64; other types throw
// InvalidArgument naming `what`.
template <typename Fn>
decltype(auto) VisitFloatDType(DType dtype, const std::string& what, Fn&& fn);

}  // namespace flotilla

#include "flotilla/common/enforce.h"

namespace flotilla {
template <typename Fn>
decltype(auto) VisitFloatDType(DType dtype, const std::string& what, Fn&& fn) {
  if (dtype == DType::kFloat64) return fn.template operator()<double>();
  FLOTILLA_ENFORCE(dtype == DType::kFloat32, what, " expects float32 or float64, got ",
                   DTypeName(dtype));
  return fn.template operator()<float>();
}
}  // namespace flotilla
