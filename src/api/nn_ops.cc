#include "api/nn_ops.h"

namespace flotilla::layers::internal {

namespace {

OpDesc& SetWindow(OpDesc& op, const ConvWindow& w) {
  return op.Set("strides", w.stride.vec())
      .Set("paddings", w.padding.values)
      .Set("padding_algorithm", w.padding.algorithm)
      .Set("dilations", w.dilation.vec())
      .Set("groups", int32_t(w.groups));
}

Variable MaybeAddBias(LayerHelper& helper, const Variable& pre, const Variable& bias) {
  return bias.valid() ? AddChannelBias(helper, pre, bias) : pre;
}

}  // namespace

int64_t Channels(const Variable& x, const char* layer) {
  const Dims& d = x.shape();
  FLOTILLA_ENFORCE(d.size() == 4 && d[1] > 0, "layers::", layer, ": input '", x.name(),
                   "' of shape ", DimsToString(d), " must be [N, C, H, W] with known C");
  return d[1];
}

Variable Conv2dOp(LayerHelper& helper, const Variable& input, const Variable& filter,
                  const Variable& bias, const ConvWindow& window) {
  const int64_t c = Channels(input, "conv2d");
  const int64_t m = filter.shape().empty() ? -1 : filter.shape()[0];
  Variable pre = helper.CreateTmp(input.dtype());
  const bool depthwise = window.groups > 1 && window.groups == c && m > 0 && m % c == 0;
  OpDesc op(depthwise ? "depthwise_conv2d" : "conv2d");
  op.In("Input", {input.name()}).In("Filter", {filter.name()}).Out("Output", {pre.name()});
  helper.Append(SetWindow(op, window));
  return MaybeAddBias(helper, pre, bias);
}

Variable Conv2dTransposeOp(LayerHelper& helper, const Variable& input, const Variable& filter,
                           const Variable& bias, const ConvWindow& window,
                           std::vector<int32_t> output_size, Size2 output_padding) {
  Channels(input, "conv2d_transpose");
  Variable pre = helper.CreateTmp(input.dtype());
  OpDesc op("conv2d_transpose");
  op.In("Input", {input.name()}).In("Filter", {filter.name()}).Out("Output", {pre.name()});
  SetWindow(op, window).Set("output_size", std::move(output_size))
      .Set("output_padding", output_padding.vec());
  helper.Append(std::move(op));
  return MaybeAddBias(helper, pre, bias);
}

Variable AddChannelBias(LayerHelper& helper, const Variable& x, const Variable& bias) {
  Variable out = helper.CreateTmp(x.dtype());
  helper.Append(OpDesc("elementwise_add")
                    .In("X", {x.name()})
                    .In("Y", {bias.name()})
                    .Out("Out", {out.name()})
                    .Set("axis", int32_t{1}));
  return out;
}

Variable BatchNormOp(LayerHelper& helper, const Variable& x, const Variable& scale,
                     const Variable& bias, const Variable& mean, const Variable& variance,
                     const BatchNormAttrs& a) {
  const DType dt = x.dtype();
  Variable y = helper.CreateTmp(dt);
  Variable saved_mean = helper.CreateTmp(dt, "saved_mean");
  Variable saved_var = helper.CreateTmp(dt, "saved_variance");
  helper.Append(OpDesc("batch_norm")
                    .In("X", {x.name()})
                    .In("Scale", {scale.name()})
                    .In("Bias", {bias.name()})
                    .In("Mean", {mean.name()})
                    .In("Variance", {variance.name()})
                    .Out("Y", {y.name()})
                    .Out("MeanOut", {mean.name()})
                    .Out("VarianceOut", {variance.name()})
                    .Out("SavedMean", {saved_mean.name()})
                    .Out("SavedVariance", {saved_var.name()})
                    .Set("momentum", a.momentum)
                    .Set("epsilon", a.epsilon)
                    .Set("is_test", a.is_test)
                    .Set("use_global_stats", a.use_global_stats)
                    .Set("fuse_with_relu", a.fuse_with_relu));
  return y;
}

Variable RowNormOp(LayerHelper& helper, const std::string& type, const Variable& x,
                   const Variable& scale, const Variable& bias, AttributeMap attrs) {
  OpDesc op(type);
  op.In("X", {x.name()});
  if (scale.valid()) op.In("Scale", {scale.name()});
  if (bias.valid()) op.In("Bias", {bias.name()});
  Variable y = helper.CreateTmp(x.dtype());
  op.Out("Y", {y.name()})
      .Out("Mean", {helper.CreateTmp(x.dtype(), "mean").name()})
      .Out("Variance", {helper.CreateTmp(x.dtype(), "variance").name()});
  for (auto& [k, v] : attrs) op.Set(k, v);
  helper.Append(std::move(op));
  return y;
}

}  // namespace flotilla::layers::internal
