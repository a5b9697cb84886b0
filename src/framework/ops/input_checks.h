// Small checks shared by the loss, softmax, lookup, metric and optimizer
// kernels: axis normalisation, label and scalar inputs. Header-only; every
// failure throws InvalidArgument naming the op (its Where()) and the slot.
#pragma once

#include <cstdint>
#include <string>

#include "flotilla/common/enforce.h"
#include "flotilla/core/tensor.h"

namespace flotilla::ops {

// Maps a Paddle-style axis (negative counts from the end) into [0, rank).
inline int NormalizeAxis(int axis, int rank, const std::string& where) {
  int a = axis < 0 ? axis + rank : axis;
  FLOTILLA_ENFORCE(a >= 0 && a < rank, where, ": attribute 'axis' = ", axis,
                   " is out of range for an input of rank ", rank);
  return a;
}

// The int64 class labels of `slot`, which must hold exactly `rows` of them.
inline const int64_t* HardLabels(const Tensor& label, int64_t rows, const std::string& where,
                                 const std::string& slot = "Label") {
  FLOTILLA_ENFORCE(label.dtype() == DType::kInt64, where, ": ", slot,
                   " must be int64 class ids, got ", DTypeName(label.dtype()));
  FLOTILLA_ENFORCE(label.numel() == rows, where, ": ", slot, " has shape ",
                   DimsToString(label.dims()), " but ", rows, " labels (one per row) are expected");
  return label.data<int64_t>();
}

// The value of a one-element tensor of any dtype (learning rates, beta powers).
inline double ScalarValue(const Tensor& t, const std::string& where, const std::string& slot) {
  FLOTILLA_ENFORCE(t.numel() == 1, where, ": ", slot, " must hold one element, got shape ",
                   DimsToString(t.dims()));
  return VisitDType(t.dtype(), [&]<typename T>() { return static_cast<double>(t.data<T>()[0]); });
}

// Throws unless `t` has the dtype of the op's main input.
inline void ExpectDType(const Tensor& t, DType expected, const std::string& where,
                        const std::string& slot) {
  FLOTILLA_ENFORCE(t.dtype() == expected, where, ": ", slot, " must be ", DTypeName(expected),
                   " like the op's main input, got ", DTypeName(t.dtype()));
}

}  // namespace flotilla::ops
