// Sequence layers over LoD variables (variable-length sequences packed along
// the first dimension; see core/lod.h) — Paddle's fluid.layers.sequence_*.
//
//   auto ids = layers::data("ids", {-1, 1}, DType::kInt64, false, 1);  // lod_level 1
//   auto emb = layers::embedding(ids, {10000, 16});                    // keeps the offsets
//   auto bag = layers::sequence_pool(emb, "sum");                       // one row per sequence
//
// Every layer appends ops to the default main program and returns its
// output; kernels check the offsets at run time and throw InvalidArgument
// naming the op when an input has none or they do not match its rows.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "flotilla/api/param_attr.h"
#include "flotilla/framework/program.h"

namespace flotilla::layers {

// One row per sequence of the input's last LoD level: pool_type "sum",
// "average", "sqrt" (sum / sqrt(length)), "max", "first" or "last" (any case).
// Empty sequences give pad_value. The output keeps the outer levels.
Variable sequence_pool(const Variable& input, const std::string& pool_type, bool is_test = false,
                       float pad_value = 0.0f);
Variable sequence_first_step(const Variable& input);
Variable sequence_last_step(const Variable& input);
// Softmax over the steps of each sequence of a [N, 1] input.
Variable sequence_softmax(const Variable& input);
// Each sequence of x (row, when x has no offsets) repeated once per step of
// the matching sequence of y's level ref_level (-1: the last).
Variable sequence_expand(const Variable& x, const Variable& y, int ref_level = -1);
// Row i of x repeated once per step of y's sequence i; offsets from y.
Variable sequence_expand_as(const Variable& x, const Variable& y);

struct SequencePadOutputs {
  Variable out;     // [sequences, maxlen, ...]
  Variable length;  // int64 [sequences]
};
// Pads every sequence to maxlen steps (-1: the longest) with pad_value, a
// variable holding one value or one row.
SequencePadOutputs sequence_pad(const Variable& x, const Variable& pad_value, int maxlen = -1);
// The inverse of sequence_pad: the first length[i] steps of x[i], packed.
Variable sequence_unpad(const Variable& x, const Variable& length);
// mask[..., j] = j < x[...] for int lengths x; maxlen -1: the largest length.
Variable sequence_mask(const Variable& x, int maxlen = -1, DType dtype = DType::kInt64);
Variable sequence_reverse(const Variable& x);
// [N, win_size] windows of the ids of each sequence, padded with pad_value.
Variable sequence_enumerate(const Variable& input, int win_size, int pad_value = 0);

// Convolution along each sequence of a [N, D] input: step r sees steps
// r + padding_start ... r + padding_start + filter_size - 1 of its own
// sequence (zeros beyond it); [N, num_filters], plus a bias and act.
// padding_start defaults to Paddle's -(filter_size / 2).
Variable sequence_conv(const Variable& input, int64_t num_filters, int filter_size = 3,
                       std::optional<int> padding_start = std::nullopt, const ParamAttr& param_attr = {},
                       const ParamAttr& bias_attr = {}, const std::string& act = "");
// Sequence i of the output = sequence i of every input, in order.
Variable sequence_concat(const std::vector<Variable>& input);
// Each sequence's rows regrouped into rows of new_dim values.
Variable sequence_reshape(const Variable& input, int new_dim);
// Steps [offset[i], offset[i] + length[i]) of sequence i (int64 [S, 1] each).
Variable sequence_slice(const Variable& input, const Variable& offset, const Variable& length);

// x's data with new offsets: y's offsets (or y's int values read as
// offsets) when y is valid, else target_lod (one level of offsets).
Variable lod_reset(const Variable& x, const Variable& y, const std::vector<int32_t>& target_lod = {});
// x's data with `level` (offsets) added below its own levels.
Variable lod_append(const Variable& x, const std::vector<int32_t>& level);

}  // namespace flotilla::layers
