#include "flotilla/api/nn_functional.h"

#include "api/nn_ops.h"
#include "flotilla/api/layers.h"

namespace flotilla::functional {

using layers::internal::ConvWindow;
using layers::internal::LayerHelper;

namespace {

void ExpectRank4(const Variable& v, const char* layer, const char* what, const char* layout) {
  FLOTILLA_ENFORCE(v.valid(), "functional::", layer, ": ", what, " is needed");
  FLOTILLA_ENFORCE(v.shape().size() == 4, "functional::", layer, ": ", what, " '", v.name(), "' of shape ",
                   DimsToString(v.shape()), " must have rank 4, expected shape ", layout);
}

}  // namespace

Variable conv2d(const Variable& x, const Variable& weight, const Variable& bias, Size2 stride,
                Padding padding, Size2 dilation, int groups) {
  ExpectRank4(x, "conv2d", "x", "[N, C, H, W]");
  ExpectRank4(weight, "conv2d", "weight", "[M, C / groups, kh, kw]");
  LayerHelper helper("conv2d");
  return layers::internal::Conv2dOp(helper, x, weight, bias, {stride, padding, dilation, groups});
}

Variable conv2d_transpose(const Variable& x, const Variable& weight, const Variable& bias, Size2 stride,
                          Padding padding, Size2 output_padding, int groups, Size2 dilation,
                          std::vector<int32_t> output_size) {
  ExpectRank4(x, "conv2d_transpose", "x", "[N, C, H, W]");
  ExpectRank4(weight, "conv2d_transpose", "weight", "[C, M / groups, kh, kw]");
  LayerHelper helper("conv2d_transpose");
  return layers::internal::Conv2dTransposeOp(helper, x, weight, bias, {stride, padding, dilation, groups},
                                             std::move(output_size), output_padding);
}

Variable batch_norm(const Variable& x, const Variable& running_mean, const Variable& running_var,
                    const Variable& weight, const Variable& bias, bool training, float momentum,
                    float epsilon, std::optional<bool> use_global_stats) {
  for (const Variable* v : {&running_mean, &running_var, &weight, &bias}) {
    FLOTILLA_ENFORCE(v->valid(), "functional::batch_norm: running_mean, running_var, weight and bias ",
                     "are all needed (input '", x.name(), "')");
  }
  LayerHelper helper("batch_norm");
  const bool global = use_global_stats.value_or(!training);
  return layers::internal::BatchNormOp(helper, x, weight, bias, running_mean, running_var,
                                       {momentum, epsilon, !training, global, false});
}

Variable layer_norm(const Variable& x, const std::vector<int64_t>& normalized_shape, const Variable& weight,
                    const Variable& bias, float epsilon) {
  const Dims& d = x.shape();
  const size_t k = normalized_shape.size();
  bool ends_with = k >= 1 && k < d.size();
  for (size_t i = 0; ends_with && i < k; ++i) ends_with = d[d.size() - k + i] == normalized_shape[i];
  FLOTILLA_ENFORCE(ends_with, "functional::layer_norm: normalized_shape ", DimsToString(normalized_shape),
                   " must be the trailing dimensions of input '", x.name(), "' ", DimsToString(d),
                   " (and leave the batch dimension)");
  LayerHelper helper("layer_norm");
  return layers::internal::RowNormOp(helper, "layer_norm", x, weight, bias,
                                     {{"begin_norm_axis", int32_t(d.size() - k)}, {"epsilon", epsilon}});
}

Variable group_norm(const Variable& x, int num_groups, float epsilon, const Variable& weight,
                    const Variable& bias) {
  layers::internal::Channels(x, "group_norm");
  LayerHelper helper("group_norm");
  return layers::internal::RowNormOp(helper, "group_norm", x, weight, bias,
                                     {{"groups", int32_t(num_groups)}, {"epsilon", epsilon}});
}

Variable linear(const Variable& x, const Variable& weight, const Variable& bias) {
  const Dims& d = x.shape();
  FLOTILLA_ENFORCE(d.size() >= 2, "functional::linear: input '", x.name(), "' of shape ", DimsToString(d),
                   " needs rank >= 2 ([batch, ..., in_features])");
  FLOTILLA_ENFORCE(weight.valid() && weight.shape().size() == 2 && weight.shape()[0] == d.back(),
                   "functional::linear: weight '", weight.name(), "' of shape ", DimsToString(weight.shape()),
                   " must be [", d.back(), ", out_features] for input '", x.name(), "' ", DimsToString(d));
  const int col_dims = static_cast<int>(d.size()) - 1;
  LayerHelper helper("linear");
  Variable out = helper.CreateTmp(x.dtype());
  helper.Append(OpDesc("mul")
                    .In("X", {x.name()})
                    .In("Y", {weight.name()})
                    .Out("Out", {out.name()})
                    .Set("x_num_col_dims", col_dims)
                    .Set("y_num_col_dims", 1));
  if (!bias.valid()) return out;
  Variable biased = helper.CreateTmp(x.dtype());
  helper.Append(OpDesc("elementwise_add")
                    .In("X", {out.name()})
                    .In("Y", {bias.name()})
                    .Out("Out", {biased.name()})
                    .Set("axis", col_dims));
  return biased;
}

Variable embedding(const Variable& ids, const Variable& weight, int64_t padding_idx, bool sparse) {
  FLOTILLA_ENFORCE(ids.dtype() == DType::kInt64, "functional::embedding: ids '", ids.name(),
                   "' must be int64, got ", DTypeName(ids.dtype()));
  FLOTILLA_ENFORCE(weight.valid() && weight.shape().size() == 2, "functional::embedding: weight '",
                   weight.name(), "' must be [vocabulary, dim], got ", DimsToString(weight.shape()));
  FLOTILLA_ENFORCE(padding_idx >= -1 && padding_idx < weight.shape()[0], "functional::embedding: padding_idx ",
                   padding_idx, " is outside [-1, ", weight.shape()[0], ")");
  LayerHelper helper("embedding");
  Variable out = helper.CreateTmp(weight.dtype());
  helper.Append(OpDesc("lookup_table_v2")
                    .In("W", {weight.name()})
                    .In("Ids", {ids.name()})
                    .Out("Out", {out.name()})
                    .Set("is_sparse", sparse)
                    .Set("is_distributed", false)
                    .Set("padding_idx", padding_idx));
  return out;
}

Variable one_hot(const Variable& x, int num_classes) {
  Variable out = layers::one_hot(x, num_classes);
  const Dims& d = x.shape();
  if (d.size() < 2 || d.back() != 1) return out;
  // The op folds a trailing 1 away (Paddle 1.x); 2.x keeps it.
  std::vector<int64_t> shape(d.size() - 1, 0);
  shape.push_back(1);
  shape.push_back(num_classes);
  return layers::reshape(out, shape);
}

}  // namespace flotilla::functional
