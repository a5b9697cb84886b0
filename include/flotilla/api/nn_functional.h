// Paddle 2.x's paddle.nn.functional convolutional layers: like those of
// nn_layers.h, but over weights the caller made (layers::create_parameter,
// or variables of another layer), so they create no parameter. Same
// conventions: each appends ops to the default main program and returns the
// output; tensors are NCHW; bad shapes throw InvalidArgument naming the layer
// and the input when the op is appended.
//
//   auto w = layers::create_parameter({16, 3, 3, 3}, DType::kFloat32, ParamAttr::Named("w"));
//   auto y = functional::conv2d(x, w, {}, /*stride=*/1, /*padding=*/1);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "flotilla/api/nn_layers.h"

namespace flotilla::functional {

using layers::Padding;
using layers::Size2;

// weight [M, C / groups, kh, kw]; bias [M] added when valid.
Variable conv2d(const Variable& x, const Variable& weight, const Variable& bias = {}, Size2 stride = 1,
                Padding padding = 0, Size2 dilation = 1, int groups = 1);

// weight [C, M / groups, kh, kw]; output_size (empty: from output_padding)
// picks among the sizes the stride allows.
Variable conv2d_transpose(const Variable& x, const Variable& weight, const Variable& bias = {},
                          Size2 stride = 1, Padding padding = 0, Size2 output_padding = 0,
                          int groups = 1, Size2 dilation = 1, std::vector<int32_t> output_size = {});

// training: normalise by the batch's statistics and update running_mean /
// running_var in place (momentum); else by the running statistics.
// use_global_stats (default: !training) forces the running statistics.
Variable batch_norm(const Variable& x, const Variable& running_mean, const Variable& running_var,
                    const Variable& weight, const Variable& bias, bool training = false,
                    float momentum = 0.9f, float epsilon = 1e-5f,
                    std::optional<bool> use_global_stats = std::nullopt);

// Normalises over the trailing dimensions normalized_shape (which must end
// x's shape); weight and bias (optional) hold prod(normalized_shape) values.
Variable layer_norm(const Variable& x, const std::vector<int64_t>& normalized_shape,
                    const Variable& weight = {}, const Variable& bias = {}, float epsilon = 1e-5f);

// Normalises each of num_groups channel groups; weight, bias [C] optional.
Variable group_norm(const Variable& x, int num_groups, float epsilon = 1e-5f, const Variable& weight = {},
                    const Variable& bias = {});

// x · weight (+ bias): weight [in, out] multiplies x's last dimension, the
// leading ones are kept; bias [out] is added when valid. The ops are
// layers::fc's (mul, elementwise_add), so the result is fc's bit for bit.
Variable linear(const Variable& x, const Variable& weight, const Variable& bias = {});

// Rows of weight [vocabulary, dim] for int64 ids of any shape: the output is
// ids' shape + [dim] (Paddle 2.x's lookup_table_v2). sparse: the gradient is
// a SelectedRows; padding_idx (-1: none, else in [0, vocabulary)) gives
// zero rows and no gradient.
Variable embedding(const Variable& ids, const Variable& weight, int64_t padding_idx = -1,
                   bool sparse = false);

// int64 ids of any shape -> float32 of that shape + [num_classes].
Variable one_hot(const Variable& x, int num_classes);

}  // namespace flotilla::functional
