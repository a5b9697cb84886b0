#include "flotilla/core/selected_rows.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>

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

namespace {

// Sorted unique rows, and for each input row its index among them.
struct RowSlots {
  std::vector<int64_t> unique;
  std::vector<int32_t> slot;
};

// Rows all in [0, height) with a height not far above their count: a bitmap
// over the height gives the sorted unique rows without a sort.
bool FitsBitmap(const std::vector<int64_t>& rows, int64_t height) {
  if (height <= 0 || height > std::max<int64_t>(int64_t{1} << 20, 16 * static_cast<int64_t>(rows.size()))) {
    return false;
  }
  return std::all_of(rows.begin(), rows.end(), [&](int64_t r) { return r >= 0 && r < height; });
}

RowSlots SlotsByBitmap(const std::vector<int64_t>& rows, int64_t height) {
  std::vector<uint64_t> seen(static_cast<size_t>((height + 63) / 64), 0);
  for (int64_t r : rows) seen[static_cast<size_t>(r >> 6)] |= uint64_t{1} << (r & 63);
  RowSlots out;
  std::unique_ptr<int32_t[]> slot_of(new int32_t[static_cast<size_t>(height)]);  // read only where seen
  for (size_t w = 0; w < seen.size(); ++w) {
    for (uint64_t bits = seen[w]; bits != 0; bits &= bits - 1) {
      int64_t r = static_cast<int64_t>(w * 64) + __builtin_ctzll(bits);
      slot_of[static_cast<size_t>(r)] = static_cast<int32_t>(out.unique.size());
      out.unique.push_back(r);
    }
  }
  out.slot.reserve(rows.size());
  for (int64_t r : rows) out.slot.push_back(slot_of[static_cast<size_t>(r)]);
  return out;
}

RowSlots SlotsBySort(const std::vector<int64_t>& rows) {
  std::vector<std::pair<int64_t, int32_t>> order(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) order[i] = {rows[i], static_cast<int32_t>(i)};
  std::sort(order.begin(), order.end());
  RowSlots out;
  out.slot.resize(rows.size());
  for (const auto& [row, i] : order) {
    if (out.unique.empty() || out.unique.back() != row) out.unique.push_back(row);
    out.slot[static_cast<size_t>(i)] = static_cast<int32_t>(out.unique.size() - 1);
  }
  return out;
}

}  // namespace

SelectedRows SelectedRows::MergeRows() const {
  FLOTILLA_ENFORCE(rows_.size() < static_cast<size_t>(INT32_MAX),
                   "SelectedRows::MergeRows: too many rows: ", rows_.size());
  RowSlots slots = FitsBitmap(rows_, height_) ? SlotsByBitmap(rows_, height_) : SlotsBySort(rows_);
  Dims dims = value_.dims();
  dims[0] = static_cast<int64_t>(slots.unique.size());
  Tensor merged(value_.dtype(), dims);
  merged.SetZero();
  int64_t width = row_width();
  VisitDType(value_.dtype(), [&]<typename T>() {
    const T* src = value_.data<T>();
    T* dst = merged.data<T>();
    for (size_t i = 0; i < rows_.size(); ++i) {
      AddRow(dst + static_cast<int64_t>(slots.slot[i]) * width, src + static_cast<int64_t>(i) * width,
             width, "SelectedRows::MergeRows", rows_[i]);
    }
  });
  return SelectedRows(std::move(slots.unique), std::move(merged), height_);
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
