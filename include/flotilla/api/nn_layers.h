// Convolutional-network layers (Paddle's fluid.layers names and defaults):
// convolution, pooling, normalisation, dropout, layout and label helpers.
// Included by flotilla/api/layers.h; same conventions: each appends ops to
// the default main program, parameters and their initialisers to the
// default startup program, and returns the output variable. Tensors are
// NCHW. Shape errors are thrown when the op is appended, naming the op, the
// input and the expected shape.
//
//   auto c = layers::conv2d(image, 64, 7, 2, 3, 1, 1, {}, ParamAttr::None());
//   auto b = layers::batch_norm(c, "relu");
//   auto p = layers::pool2d(b, 3, "max", 2, 1);
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "flotilla/api/param_attr.h"
#include "flotilla/framework/program.h"

namespace flotilla::layers {

// An (H, W) pair given as one value for both or as {h, w}.
struct Size2 {
  Size2(int v) : h(v), w(v) {}  // NOLINT(google-explicit-constructor)
  Size2(int h_, int w_) : h(h_), w(w_) {}
  int h, w;
  std::vector<int32_t> vec() const { return {h, w}; }
};

// Padding: one value, {h, w}, {top, bottom, left, right}, or "SAME"/"VALID".
struct Padding {
  Padding(int v) : values{v, v} {}  // NOLINT(google-explicit-constructor)
  Padding(std::initializer_list<int> v) : values(v.begin(), v.end()) {}
  Padding(const char* algo) : algorithm(algo) {}  // NOLINT(google-explicit-constructor)
  std::vector<int32_t> values{0, 0};
  std::string algorithm = "EXPLICIT";
};

// Out = act(conv(input, W) + b). W: [num_filters, C / groups, kh, kw],
// default Normal(0, sqrt(2 / (kh * kw * C))) (Paddle's); b: [num_filters],
// 0, added unless bias_attr is ParamAttr::None(). act: "" or an activation
// of layers (relu, tanh, sigmoid, softmax).
Variable conv2d(const Variable& input, int num_filters, Size2 filter_size, Size2 stride = 1,
                Padding padding = 0, Size2 dilation = 1, int groups = 1,
                const ParamAttr& param_attr = {}, const ParamAttr& bias_attr = {},
                const std::string& act = "", const std::string& name = "");

// The transpose (gradient) of conv2d: W [C, num_filters / groups, kh, kw].
// output_size (empty: the smallest) picks among the sizes a stride allows.
Variable conv2d_transpose(const Variable& input, int num_filters, Size2 filter_size,
                          std::vector<int32_t> output_size = {}, Size2 stride = 1,
                          Padding padding = 0, Size2 dilation = 1, int groups = 1,
                          const ParamAttr& param_attr = {}, const ParamAttr& bias_attr = {},
                          const std::string& act = "", const std::string& name = "");

// pool_type "max" or "avg"; global_pooling pools each whole map to 1x1;
// exclusive: avg ignores padding cells.
Variable pool2d(const Variable& input, Size2 pool_size = 1, const std::string& pool_type = "max",
                Size2 pool_stride = 1, Padding pool_padding = 0, bool global_pooling = false,
                bool ceil_mode = false, bool exclusive = true, const std::string& name = "");
// Pools into a pool_size output grid whatever the input size.
Variable adaptive_pool2d(const Variable& input, Size2 pool_size, const std::string& pool_type = "max",
                         const std::string& name = "");

// Batch normalisation over N, H, W per channel. Scale (1), Bias (0) are
// parameters; moving mean (0) and variance (1) are persistable, untrained
// variables named moving_mean_name / moving_variance_name (default
// "<layer>.w_1", "<layer>.w_2"). act "relu" is fused into the op.
struct BatchNormOptions {
  std::string act;
  bool is_test = false;
  float momentum = 0.9f;
  float epsilon = 1e-5f;
  ParamAttr param_attr;
  ParamAttr bias_attr;
  std::string name;
  std::string moving_mean_name;
  std::string moving_variance_name;
  bool use_global_stats = false;
};
Variable batch_norm(const Variable& input, const BatchNormOptions& options);
Variable batch_norm(const Variable& input, const std::string& act = "");

Variable layer_norm(const Variable& input, bool scale = true, bool shift = true,
                    int begin_norm_axis = 1, float epsilon = 1e-5f, const ParamAttr& param_attr = {},
                    const ParamAttr& bias_attr = {}, const std::string& act = "");
Variable group_norm(const Variable& input, int groups, float epsilon = 1e-5f,
                    const ParamAttr& param_attr = {}, const ParamAttr& bias_attr = {},
                    const std::string& act = "");

// seed 0: fresh masks every step; else reproducible masks that differ by rank.
Variable dropout(const Variable& x, float dropout_prob, bool is_test = false, int seed = 0,
                 const std::string& dropout_implementation = "downgrade_in_infer");

Variable flatten(const Variable& x, int axis = 1);
Variable transpose(const Variable& x, std::vector<int32_t> perm);
Variable pad2d(const Variable& input, std::vector<int32_t> paddings, const std::string& mode = "constant",
               float pad_value = 0.0f);
// resample "BILINEAR" or "NEAREST"; out_shape {h, w}, or scale > 0.
Variable image_resize(const Variable& input, std::vector<int32_t> out_shape, float scale = 0.0f,
                      const std::string& resample = "BILINEAR", bool align_corners = true,
                      int align_mode = 1);
Variable resize_bilinear(const Variable& input, std::vector<int32_t> out_shape, float scale = 0.0f,
                         bool align_corners = true, int align_mode = 1);
Variable resize_nearest(const Variable& input, std::vector<int32_t> out_shape, float scale = 0.0f,
                        bool align_corners = true);

Variable relu6(const Variable& x, float threshold = 6.0f);
Variable hard_swish(const Variable& x, float threshold = 6.0f, float scale = 6.0f, float offset = 3.0f);

// int64 ids [N, 1] -> float32 [N, depth].
Variable one_hot(const Variable& input, int depth);
// (1 - epsilon) * label + epsilon / C (or epsilon * prior_dist).
Variable label_smooth(const Variable& label, float epsilon = 0.1f, const Variable& prior_dist = {});

}  // namespace flotilla::layers
