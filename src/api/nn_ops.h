// The ops behind the convolutional layers, appended with a LayerHelper so
// that a layer's temporaries carry its name. Shared by nn_layers.cc (which
// creates the parameters first, Paddle 1.x fluid.layers) and
// nn_functional.cc (which is given them, Paddle 2.x nn.functional).
// Every function appends to the helper's (the default) main program and
// throws InvalidArgument naming the layer and the input on a bad shape.
#pragma once

#include <string>
#include <vector>

#include "api/layer_helper.h"
#include "flotilla/api/nn_layers.h"

namespace flotilla::layers::internal {

// C of an [N, C, H, W] input with known C; else throws naming `layer`.
int64_t Channels(const Variable& x, const char* layer);

struct ConvWindow {
  Size2 stride = 1;
  Padding padding = 0;
  Size2 dilation = 1;
  int groups = 1;
};

// conv2d (depthwise_conv2d when every group is one input channel) of
// input by filter [M, C/groups, kh, kw], plus bias [M] when valid.
Variable Conv2dOp(LayerHelper& helper, const Variable& input, const Variable& filter,
                  const Variable& bias, const ConvWindow& window);

// conv2d_transpose of input by filter [C, M/groups, kh, kw], plus bias.
// output_size (empty: the smallest) or output_padding picks the output size.
Variable Conv2dTransposeOp(LayerHelper& helper, const Variable& input, const Variable& filter,
                           const Variable& bias, const ConvWindow& window,
                           std::vector<int32_t> output_size, Size2 output_padding);

// out = x + b along axis 1.
Variable AddChannelBias(LayerHelper& helper, const Variable& x, const Variable& bias);

struct BatchNormAttrs {
  float momentum = 0.9f;
  float epsilon = 1e-5f;
  bool is_test = false;
  bool use_global_stats = false;
  bool fuse_with_relu = false;
};
// batch_norm of x [N, C, ...]; mean and variance are updated in place
// (MeanOut/VarianceOut) in training.
Variable BatchNormOp(LayerHelper& helper, const Variable& x, const Variable& scale,
                     const Variable& bias, const Variable& mean, const Variable& variance,
                     const BatchNormAttrs& attrs);

// layer_norm or group_norm ("type") of x; scale and bias optional.
Variable RowNormOp(LayerHelper& helper, const std::string& type, const Variable& x,
                   const Variable& scale, const Variable& bias, AttributeMap attrs);

}  // namespace flotilla::layers::internal
