// Image-classification networks built from flotilla::layers, with the layer
// and parameter names of Paddle's image-classification ResNet, so weights
// saved by one map by name onto the other:
//   conv1_weights, bn_conv1_{scale,offset,mean,variance},
//   res2a_branch2a_weights, bn2a_branch2a_*, ..., res4b22_branch2c_* (101/152),
//   fc_0.w_0, fc_0.b_0.
// Each function appends to the default main/startup programs and returns
// the logits [N, class_dim] (no softmax). Not thread-safe (programs are
// per thread).
#pragma once

#include <string>

#include "flotilla/framework/program.h"

namespace flotilla::models {

// ResNet-18/34 (basic blocks) or 50/101/152 (bottleneck blocks) on NCHW
// images of any size >= 32x32. Throws InvalidArgument for another depth.
Variable ResNet(const Variable& image, int layers, int class_dim);

// The depth of "ResNet50" (also "resnet50", "ResNet50_vd" is not supported);
// throws InvalidArgument naming the model and the choices.
int ResNetDepth(const std::string& model);

// conv (no bias) + batch_norm (+ fused relu when act == "relu"), named
// "<name>_weights" and "bn<name without 'res'>_*" (bn_conv1_* for conv1).
Variable ConvBnLayer(const Variable& input, int num_filters, int filter_size, int stride,
                     const std::string& act, const std::string& name);
// Two 3x3 conv-bn layers plus the shortcut (a 1x1 conv-bn when the shape
// changes or is_first), then relu(sum).
Variable BasicBlock(const Variable& input, int num_filters, int stride, bool is_first,
                    const std::string& name);
// 1x1, 3x3 (strided), 1x1 (4x filters) conv-bn layers plus the shortcut.
Variable BottleneckBlock(const Variable& input, int num_filters, int stride,
                         const std::string& name);

// A LeNet-style CNN for small images (tests, examples): two conv(5x5, pad
// 2)-relu-maxpool stages (20, 50 filters), fc 500 relu, fc class_dim.
Variable LeNet(const Variable& image, int class_dim);

}  // namespace flotilla::models
