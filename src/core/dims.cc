#include "flotilla/core/dims.h"

#include "flotilla/common/enforce.h"

namespace flotilla {

int64_t Numel(const Dims& dims) { return Product(dims, 0, dims.size()); }

int64_t Product(const Dims& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) {
    if (dims[i] < 0) return -1;
    FLOTILLA_ENFORCE(!__builtin_mul_overflow(n, dims[i], &n), "the element count of shape ",
                     DimsToString(dims), " overflows a 64-bit integer");
  }
  return n;
}

std::string DimsToString(const Dims& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

Dims FlattenTo2D(const Dims& dims, int num_col_dims) {
  FLOTILLA_ENFORCE(num_col_dims >= 0 && num_col_dims <= static_cast<int>(dims.size()),
                   "cannot flatten ", DimsToString(dims), " at column ", num_col_dims);
  return {Product(dims, 0, num_col_dims), Product(dims, num_col_dims, dims.size())};
}

bool DimsCompatible(const Dims& expected, const Dims& actual) {
  if (expected.size() != actual.size()) return false;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] >= 0 && expected[i] != actual[i]) return false;
  }
  return true;
}

int64_t CheckedMul(int64_t a, int64_t b, const std::string& what) {
  int64_t out = 0;
  FLOTILLA_CHECK(a >= 0 && b >= 0 && !__builtin_mul_overflow(a, b, &out), Corruption, what,
                 ": size ", a, " x ", b, " is negative or overflows");
  return out;
}

size_t CheckedByteSize(const Dims& dims, size_t element_bytes, size_t max_bytes,
                       const std::string& what) {
  uint64_t bytes = element_bytes;
  for (int64_t d : dims) {
    FLOTILLA_CHECK(d >= 0 && !__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes),
                   Corruption, what, ": shape ", DimsToString(dims),
                   " has a negative dimension or overflows");
  }
  FLOTILLA_CHECK(bytes <= max_bytes, Corruption, what, ": shape ", DimsToString(dims), " needs ",
                 bytes, " bytes, more than the limit of ", max_bytes);
  return static_cast<size_t>(bytes);
}

}  // namespace flotilla
