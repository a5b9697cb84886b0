// Layers: functions that append ops (and their parameters) to the default
// main and startup programs and return the output variable — Paddle's
// fluid.layers in C++. Use a ProgramGuard to build into other programs.
//
//   auto x = layers::data("x", {13});              // [-1, 13] float32
//   auto pred = layers::fc(x, 1);
//   auto loss = layers::mean(layers::square_error_cost(pred, y));
#pragma once

#include <string>
#include <vector>

#include "flotilla/api/param_attr.h"
#include "flotilla/framework/program.h"

namespace flotilla::layers {

// A variable fed by the user. When `shape` holds no -1 and
// append_batch_size is set, a leading -1 (the batch) is added, as Paddle's
// fluid.layers.data does; a shape with -1 is used as is. lod_level 1: each
// batch is variable-length sequences packed along the first dimension.
// Declaring a name again in the same program with the same shape, dtype and
// lod_level returns that variable (as Paddle does); a different declaration
// throws InvalidArgument naming both.
Variable data(const std::string& name, Dims shape, DType dtype = DType::kFloat32,
              bool append_batch_size = true, int lod_level = 0);

// out = act(input · W + b). input is flattened to 2-D at num_flatten_dims.
// W defaults to Xavier, b to 0. act: "", "relu", "tanh", "sigmoid", "softmax".
Variable fc(const Variable& input, int64_t size, int num_flatten_dims = 1,
            const ParamAttr& param_attr = {}, const ParamAttr& bias_attr = {},
            const std::string& act = "", const std::string& name = "");
// Several inputs: Σ_i input_i · W_i + b.
Variable fc(const std::vector<Variable>& inputs, int64_t size, int num_flatten_dims = 1,
            const ParamAttr& param_attr = {}, const ParamAttr& bias_attr = {},
            const std::string& act = "", const std::string& name = "");

// Looks up rows of a [size[0], size[1]] table for int64 ids ([N, 1] or [N]).
// is_sparse: the gradient is SelectedRows. is_distributed: the table lives
// on parameter servers (the PS transpiler rewrites the lookup).
Variable embedding(const Variable& input, std::vector<int64_t> size, bool is_sparse = false,
                   bool is_distributed = false, int64_t padding_idx = -1,
                   const ParamAttr& param_attr = {}, DType dtype = DType::kFloat32);

Variable relu(const Variable& x);
Variable tanh(const Variable& x);
Variable sigmoid(const Variable& x);
Variable softmax(const Variable& x, int axis = -1);
Variable square(const Variable& x);
Variable softsign(const Variable& x);  // x / (1 + |x|)
Variable scale(const Variable& x, float scale = 1.0f, float bias = 0.0f, bool bias_after_scale = true);

Variable cross_entropy(const Variable& input, const Variable& label, bool soft_label = false,
                       int64_t ignore_index = -100);
Variable square_error_cost(const Variable& input, const Variable& label);
Variable softmax_with_cross_entropy(const Variable& logits, const Variable& label,
                                    bool soft_label = false, int64_t ignore_index = -100);
Variable sigmoid_cross_entropy_with_logits(const Variable& x, const Variable& label,
                                           int64_t ignore_index = -100, bool normalize = false);
// -label·log(input + ε) - (1 - label)·log(1 - input + ε), elementwise, for
// probabilities `input` and labels in [0, 1] of the same shape.
Variable log_loss(const Variable& input, const Variable& label, float epsilon = 1e-4f);

Variable mean(const Variable& x);
Variable reduce_sum(const Variable& x, std::vector<int32_t> dim = {}, bool keep_dim = false);
Variable reduce_mean(const Variable& x, std::vector<int32_t> dim = {}, bool keep_dim = false);
Variable elementwise_add(const Variable& x, const Variable& y, int axis = -1, const std::string& act = "");
Variable elementwise_sub(const Variable& x, const Variable& y, int axis = -1, const std::string& act = "");
Variable elementwise_mul(const Variable& x, const Variable& y, int axis = -1, const std::string& act = "");
Variable elementwise_div(const Variable& x, const Variable& y, int axis = -1, const std::string& act = "");
Variable elementwise_max(const Variable& x, const Variable& y, int axis = -1, const std::string& act = "");
Variable elementwise_min(const Variable& x, const Variable& y, int axis = -1, const std::string& act = "");
// One of less_than, less_equal, greater_than, greater_equal, equal,
// not_equal: 1/0 as int64 (Flotilla has no bool dtype).
Variable compare(const std::string& type, const Variable& x, const Variable& y, int axis = -1);
// Cosine similarity of matching rows of x [N, ...] and y [N or 1, ...]:
// [N, 1]. eps > 0 bounds the denominator below (zero rows give 0).
Variable cos_sim(const Variable& x, const Variable& y, float eps = 0.0f);
Variable matmul(const Variable& x, const Variable& y, bool transpose_x = false,
                bool transpose_y = false, float alpha = 1.0f);
Variable sums(const std::vector<Variable>& xs);
Variable concat(const std::vector<Variable>& xs, int axis = 0);
Variable reshape(const Variable& x, std::vector<int64_t> shape);
Variable cast(const Variable& x, DType dtype);
Variable fill_constant(std::vector<int64_t> shape, DType dtype, double value,
                       const std::string& name = "");
// fill_constant whose dim output_dim_idx is input's dim input_dim_idx.
Variable fill_constant_batch_size_like(const Variable& input, std::vector<int64_t> shape, DType dtype,
                                       double value, int input_dim_idx = 0, int output_dim_idx = 0);

// Top-k accuracy of class probabilities against int64 labels: [1] float32.
Variable accuracy(const Variable& input, const Variable& label, int k = 1);

// Streaming ROC AUC (Paddle's layers.auc): `auc` covers every batch since
// the state was last reset; stat_pos/stat_neg are the persistable
// histograms (zeroed by the startup program).
struct AucOutputs {
  Variable auc;
  Variable stat_pos;
  Variable stat_neg;
};
AucOutputs auc(const Variable& input, const Variable& label, int num_thresholds = 4095);

// A parameter (persistable, trainable) initialised in the startup program.
Variable create_parameter(Dims shape, DType dtype, const ParamAttr& attr, bool is_bias = false,
                          initializer::InitializerPtr default_initializer = nullptr);
// A persistable variable set to `value` by the startup program.
Variable create_global_var(Dims shape, double value, DType dtype, bool persistable = true,
                           const std::string& name = "");

}  // namespace flotilla::layers

// Convolution, pooling, normalisation, dropout and layout layers.
#include "flotilla/api/nn_layers.h"  // IWYU pragma: export
// Sequence (LoD) layers.
#include "flotilla/api/sequence_layers.h"  // IWYU pragma: export
