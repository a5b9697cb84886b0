#include "flotilla/core/selected_rows.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <unordered_map>

#include "flotilla/common/enforce.h"

namespace flotilla {
namespace {

// out[j] += in[j] for one row of `width` elements. Values may come from
// outside (a tensor file, a sparse push), so integer sums are checked: one
// that overflows throws InvalidArgument naming `what`, the row and the
// operands; floating-point sums follow IEEE (inf), as everywhere else.
template <typename T>
void AddRow(T* out, const T* in, int64_t width, const char* what, int64_t row) {
  if constexpr (std::is_integral_v<T>) {
    for (int64_t j = 0; j < width; ++j) {
      T sum;
      FLOTILLA_ENFORCE(!__builtin_add_overflow(out[j], in[j], &sum), what, ": summing the ",
                       DTypeName(DTypeOf<T>()), " values of row ", row, " overflows: ", out[j],
                       " + ", in[j]);
      out[j] = sum;
    }
  } else {
    for (int64_t j = 0; j < width; ++j) out[j] += in[j];
  }
}

}  // namespace

int64_t SelectedRows::row_width() const {
  if (value_.rank() == 0 || value_.dims()[0] == 0) return Product(value_.dims(), 1, value_.rank());
  return value_.numel() / value_.dims()[0];
}

SelectedRows SelectedRows::MergeRows() const {
  std::vector<int64_t> unique = rows_;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  std::unordered_map<int64_t, int64_t> index;
  for (size_t i = 0; i < unique.size(); ++i) index[unique[i]] = static_cast<int64_t>(i);
  Dims dims = value_.dims();
  dims[0] = static_cast<int64_t>(unique.size());
  Tensor merged(value_.dtype(), dims);
  merged.SetZero();
  int64_t width = row_width();
  VisitDType(value_.dtype(), [&]<typename T>() {
    const T* src = value_.data<T>();
    T* dst = merged.data<T>();
    for (size_t i = 0; i < rows_.size(); ++i) {
      T* out = dst + index[rows_[i]] * width;
      AddRow(out, src + static_cast<int64_t>(i) * width, width, "SelectedRows::MergeRows",
             rows_[i]);
    }
  });
  return SelectedRows(std::move(unique), std::move(merged), height_);
}

Tensor SelectedRows::ToDense() const {
  Dims dims = value_.dims();
  FLOTILLA_ENFORCE(!dims.empty(), "SelectedRows value must have at least one dimension");
  dims[0] = height_;
  Tensor dense(value_.dtype(), dims);
  dense.SetZero();
  int64_t width = row_width();
  VisitDType(value_.dtype(), [&]<typename T>() {
    const T* src = value_.data<T>();
    T* dst = dense.data<T>();
    for (size_t i = 0; i < rows_.size(); ++i) {
      FLOTILLA_ENFORCE(rows_[i] >= 0 && rows_[i] < height_, "SelectedRows row ", rows_[i],
                       " out of range [0, ", height_, ")");
      AddRow(dst + rows_[i] * width, src + static_cast<int64_t>(i) * width, width,
             "SelectedRows::ToDense", rows_[i]);
    }
  });
  return dense;
}

}  // namespace flotilla
