#include "flotilla/core/dims.h"

#include "flotilla/common/enforce.h"

namespace flotilla {

int64_t Numel(const Dims& dims) { return Product(dims, 0, dims.size()); }

int64_t Product(const Dims& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) {
    if (dims[i] < 0) return -1;
    n *= dims[i];
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

}  // namespace flotilla
