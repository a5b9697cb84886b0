#include "flotilla/core/selected_rows.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "flotilla/common/enforce.h"

namespace flotilla {

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
      const T* in = src + static_cast<int64_t>(i) * width;
      for (int64_t j = 0; j < width; ++j) out[j] += in[j];
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
      T* out = dst + rows_[i] * width;
      for (int64_t j = 0; j < width; ++j) out[j] += src[i * width + j];
    }
  });
  return dense;
}

}  // namespace flotilla
