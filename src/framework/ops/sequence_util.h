// Shared by the sequence ops: the offsets of a LoD input, row widths and the
// LoD their outputs keep. Every failure throws InvalidArgument naming the op.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "flotilla/common/enforce.h"
#include "flotilla/core/lod.h"
#include "flotilla/core/tensor.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla::ops {

// The last level of `x`'s offsets (the one indexing its rows), validated
// against its first dimension.
inline const LoDLevel& SequenceOffsets(const Tensor& x, const std::string& where,
                                       const std::string& slot = "X") {
  FLOTILLA_ENFORCE(x.has_lod() && x.rank() >= 1, where, ": ", slot,
                   " must be a LoD tensor (variable-length sequences, lod_level >= 1), got a dense "
                   "tensor of shape ", DimsToString(x.dims()));
  CheckLoD(x.lod(), x.dim(0), where + ": " + slot);
  return x.lod().back();
}

inline int64_t NumSequences(const LoDLevel& offsets) { return static_cast<int64_t>(offsets.size()) - 1; }

// Elements per row of the first dimension: [N, a, b] → a * b.
inline int64_t RowWidth(const Tensor& x) { return Product(x.dims(), 1, x.dims().size()); }

// x's offsets without their last level: the LoD of one row per sequence.
inline LoD OuterLevels(const Tensor& x) {
  const LoD& lod = x.lod();
  return lod.empty() ? LoD{} : LoD(lod.begin(), lod.end() - 1);
}

// [rows, rest of x's shape].
inline Dims WithRows(const Dims& x, int64_t rows) {
  Dims out = x;
  if (out.empty()) out.push_back(rows);
  out[0] = rows;
  return out;
}

// The gradient slots of a sequence op, for OpRegistry::RegisterWithGrad:
// the forward `inputs` and `outputs` (the LoD input among them),
// out_grad@GRAD in, in_grad@GRAD out.
inline GradSlots SequenceGrad(std::vector<std::string> inputs, std::vector<std::string> outputs = {},
                              std::string out_grad = "Out", std::string in_grad = "X") {
  return {.forward_inputs = std::move(inputs),
          .forward_outputs = std::move(outputs),
          .output_grads = {std::move(out_grad)},
          .input_grads = {std::move(in_grad)}};
}

}  // namespace flotilla::ops
