// SelectedRows: a sparse slice of a [height, width...] tensor — the rows
// listed in rows() with their values in value() ([rows.size(), width...]).
// Sparse embedding gradients and sparse table pushes travel in this form.
// Rows may repeat; MergeRows and ToDense sum them (InvalidArgument on int overflow).
#pragma once

#include <cstdint>
#include <vector>

#include "flotilla/core/tensor.h"

namespace flotilla {

class SelectedRows {
 public:
  SelectedRows() = default;
  SelectedRows(std::vector<int64_t> rows, Tensor value, int64_t height)
      : rows_(std::move(rows)), value_(std::move(value)), height_(height) {}

  const std::vector<int64_t>& rows() const { return rows_; }
  std::vector<int64_t>* mutable_rows() { return &rows_; }
  const Tensor& value() const { return value_; }
  Tensor* mutable_value() { return &value_; }
  int64_t height() const { return height_; }
  void set_height(int64_t h) { height_ = h; }
  // Elements per row of value().
  int64_t row_width() const;

  // Returns rows sorted and unique with the values of equal rows summed.
  SelectedRows MergeRows() const;
  // Dense [height, width...] tensor with zeros where no row is present.
  Tensor ToDense() const;

 private:
  std::vector<int64_t> rows_;
  Tensor value_;
  int64_t height_ = 0;
};

}  // namespace flotilla
