#include "flotilla/api/nn_layers.h"

#include <cmath>

#include "api/layer_helper.h"
#include "flotilla/api/layers.h"

namespace flotilla::layers {

using internal::LayerHelper;
using internal::UnaryOp;

namespace {

int64_t Channels(const Variable& x, const char* layer) {
  const Dims& d = x.shape();
  FLOTILLA_ENFORCE(d.size() == 4 && d[1] > 0, "layers::", layer, ": input '", x.name(),
                   "' of shape ", DimsToString(d), " must be [N, C, H, W] with known C");
  return d[1];
}

// Adds bias b [channels] along axis 1 (when enabled) and applies act.
Variable BiasAndAct(LayerHelper& helper, const Variable& pre, int64_t channels,
                    const ParamAttr& bias_attr, const std::string& act) {
  Variable out = pre;
  if (bias_attr.enabled) {
    Variable b = helper.CreateParameter(bias_attr, {channels}, pre.dtype(), true,
                                        std::make_shared<initializer::Constant>(0.0));
    out = helper.CreateTmp(pre.dtype());
    helper.Append(OpDesc("elementwise_add")
                      .In("X", {pre.name()})
                      .In("Y", {b.name()})
                      .Out("Out", {out.name()})
                      .Set("axis", int32_t{1}));
  }
  return helper.Activate(out, act);
}

OpDesc& SetWindow(OpDesc& op, Size2 stride, const Padding& padding, Size2 dilation) {
  return op.Set("strides", stride.vec())
      .Set("paddings", padding.values)
      .Set("padding_algorithm", padding.algorithm)
      .Set("dilations", dilation.vec());
}

}  // namespace

Variable conv2d(const Variable& input, int num_filters, Size2 filter_size, Size2 stride,
                Padding padding, Size2 dilation, int groups, const ParamAttr& param_attr,
                const ParamAttr& bias_attr, const std::string& act, const std::string& name) {
  const int64_t c = Channels(input, "conv2d");
  FLOTILLA_ENFORCE(num_filters > 0 && groups > 0 && c % groups == 0, "layers::conv2d: num_filters (",
                   num_filters, ") must be positive and groups (", groups, ") must divide the ", c,
                   " input channels");
  LayerHelper helper(name.empty() ? "conv2d" : name);
  const double fan_in = double(filter_size.h) * filter_size.w * double(c) / groups;
  Variable w = helper.CreateParameter(
      param_attr, {num_filters, c / groups, filter_size.h, filter_size.w}, input.dtype(), false,
      std::make_shared<initializer::Normal>(0.0, std::sqrt(2.0 / fan_in)));
  Variable pre = helper.CreateTmp(input.dtype());
  const bool depthwise = groups > 1 && groups == c && num_filters % c == 0;
  OpDesc op(depthwise ? "depthwise_conv2d" : "conv2d");
  op.In("Input", {input.name()}).In("Filter", {w.name()}).Out("Output", {pre.name()});
  helper.Append(SetWindow(op, stride, padding, dilation).Set("groups", int32_t(groups)));
  return BiasAndAct(helper, pre, num_filters, bias_attr, act);
}

Variable conv2d_transpose(const Variable& input, int num_filters, Size2 filter_size,
                          std::vector<int32_t> output_size, Size2 stride, Padding padding,
                          Size2 dilation, int groups, const ParamAttr& param_attr,
                          const ParamAttr& bias_attr, const std::string& act,
                          const std::string& name) {
  const int64_t c = Channels(input, "conv2d_transpose");
  FLOTILLA_ENFORCE(num_filters > 0 && groups > 0 && num_filters % groups == 0 && c % groups == 0,
                   "layers::conv2d_transpose: groups (", groups, ") must divide num_filters (",
                   num_filters, ") and the ", c, " input channels");
  LayerHelper helper(name.empty() ? "conv2d_transpose" : name);
  const double fan_in = double(filter_size.h) * filter_size.w * double(c) / groups;
  Variable w = helper.CreateParameter(
      param_attr, {c, num_filters / groups, filter_size.h, filter_size.w}, input.dtype(), false,
      std::make_shared<initializer::Normal>(0.0, std::sqrt(2.0 / fan_in)));
  Variable pre = helper.CreateTmp(input.dtype());
  OpDesc op("conv2d_transpose");
  op.In("Input", {input.name()}).In("Filter", {w.name()}).Out("Output", {pre.name()});
  SetWindow(op, stride, padding, dilation).Set("groups", int32_t(groups)).Set("output_size", output_size);
  helper.Append(std::move(op));
  return BiasAndAct(helper, pre, num_filters, bias_attr, act);
}

Variable pool2d(const Variable& input, Size2 pool_size, const std::string& pool_type,
                Size2 pool_stride, Padding pool_padding, bool global_pooling, bool ceil_mode,
                bool exclusive, const std::string& name) {
  LayerHelper helper(name.empty() ? "pool2d" : name);
  Variable out = helper.CreateTmp(input.dtype());
  OpDesc op("pool2d");
  op.In("X", {input.name()}).Out("Out", {out.name()});
  SetWindow(op, pool_stride, pool_padding, 1)
      .Set("pooling_type", pool_type)
      .Set("ksize", pool_size.vec())
      .Set("global_pooling", global_pooling)
      .Set("ceil_mode", ceil_mode)
      .Set("exclusive", exclusive);
  helper.Append(std::move(op));
  return out;
}

Variable adaptive_pool2d(const Variable& input, Size2 pool_size, const std::string& pool_type,
                         const std::string& name) {
  LayerHelper helper(name.empty() ? "adaptive_pool2d" : name);
  Variable out = helper.CreateTmp(input.dtype());
  helper.Append(OpDesc("pool2d")
                    .In("X", {input.name()})
                    .Out("Out", {out.name()})
                    .Set("pooling_type", pool_type)
                    .Set("ksize", pool_size.vec())
                    .Set("adaptive", true));
  return out;
}

Variable batch_norm(const Variable& input, const std::string& act) {
  return batch_norm(input, BatchNormOptions{.act = act});
}

Variable batch_norm(const Variable& input, const BatchNormOptions& o) {
  const Dims& d = input.shape();
  FLOTILLA_ENFORCE(d.size() >= 2 && d[1] > 0, "layers::batch_norm: input '", input.name(),
                   "' of shape ", DimsToString(d), " must be [N, C, ...] with known C");
  FLOTILLA_ENFORCE(o.act.empty() || o.act == "relu", "layers::batch_norm: act must be '' or relu, got '",
                   o.act, "'");
  LayerHelper helper(o.name.empty() ? "batch_norm" : o.name);
  const Dims c{d[1]};
  const DType dt = input.dtype();
  Variable scale = helper.CreateParameter(o.param_attr, c, dt, false,
                                          std::make_shared<initializer::Constant>(1.0));
  Variable bias = helper.CreateParameter(o.bias_attr, c, dt, true,
                                         std::make_shared<initializer::Constant>(0.0));
  ParamAttr mean_attr = ParamAttr::Named(o.moving_mean_name, std::make_shared<initializer::Constant>(0.0));
  ParamAttr var_attr = ParamAttr::Named(o.moving_variance_name, std::make_shared<initializer::Constant>(1.0));
  mean_attr.trainable = var_attr.trainable = false;
  Variable mean = helper.CreateParameter(mean_attr, c, dt, false, nullptr);
  Variable var = helper.CreateParameter(var_attr, c, dt, false, nullptr);
  Variable y = helper.CreateTmp(dt);
  Variable saved_mean = helper.CreateTmp(dt, "saved_mean");
  Variable saved_var = helper.CreateTmp(dt, "saved_variance");
  helper.Append(OpDesc("batch_norm")
                    .In("X", {input.name()})
                    .In("Scale", {scale.name()})
                    .In("Bias", {bias.name()})
                    .In("Mean", {mean.name()})
                    .In("Variance", {var.name()})
                    .Out("Y", {y.name()})
                    .Out("MeanOut", {mean.name()})
                    .Out("VarianceOut", {var.name()})
                    .Out("SavedMean", {saved_mean.name()})
                    .Out("SavedVariance", {saved_var.name()})
                    .Set("momentum", o.momentum)
                    .Set("epsilon", o.epsilon)
                    .Set("is_test", o.is_test)
                    .Set("use_global_stats", o.use_global_stats)
                    .Set("fuse_with_relu", o.act == "relu"));
  return y;
}

namespace {

Variable RowNorm(const std::string& type, const Variable& input, int64_t channels, bool scale,
                 bool shift, const ParamAttr& param_attr, const ParamAttr& bias_attr,
                 const std::string& act, AttributeMap attrs) {
  LayerHelper helper(type);
  OpDesc op(type);
  op.In("X", {input.name()});
  if (scale) {
    op.In("Scale", {helper.CreateParameter(param_attr, {channels}, input.dtype(), false,
                                           std::make_shared<initializer::Constant>(1.0)).name()});
  }
  if (shift) {
    op.In("Bias", {helper.CreateParameter(bias_attr, {channels}, input.dtype(), true,
                                          std::make_shared<initializer::Constant>(0.0)).name()});
  }
  Variable y = helper.CreateTmp(input.dtype());
  op.Out("Y", {y.name()})
      .Out("Mean", {helper.CreateTmp(input.dtype(), "mean").name()})
      .Out("Variance", {helper.CreateTmp(input.dtype(), "variance").name()});
  for (auto& [k, v] : attrs) op.Set(k, v);
  helper.Append(std::move(op));
  return helper.Activate(y, act);
}

}  // namespace

Variable layer_norm(const Variable& input, bool scale, bool shift, int begin_norm_axis,
                    float epsilon, const ParamAttr& param_attr, const ParamAttr& bias_attr,
                    const std::string& act) {
  const Dims& d = input.shape();
  FLOTILLA_ENFORCE(begin_norm_axis >= 1 && begin_norm_axis < static_cast<int>(d.size()),
                   "layers::layer_norm: begin_norm_axis ", begin_norm_axis, " out of range for ",
                   DimsToString(d));
  const int64_t channels = Product(d, begin_norm_axis, d.size());
  FLOTILLA_ENFORCE(channels > 0, "layers::layer_norm: the normalised dims of ", DimsToString(d),
                   " must be known");
  return RowNorm("layer_norm", input, channels, scale, shift, param_attr, bias_attr, act,
                 {{"begin_norm_axis", int32_t(begin_norm_axis)}, {"epsilon", epsilon}});
}

Variable group_norm(const Variable& input, int groups, float epsilon, const ParamAttr& param_attr,
                    const ParamAttr& bias_attr, const std::string& act) {
  const int64_t c = Channels(input, "group_norm");
  return RowNorm("group_norm", input, c, param_attr.enabled, bias_attr.enabled, param_attr, bias_attr,
                 act, {{"groups", int32_t(groups)}, {"epsilon", epsilon}});
}

Variable dropout(const Variable& x, float dropout_prob, bool is_test, int seed,
                 const std::string& dropout_implementation) {
  LayerHelper helper("dropout");
  Variable out = helper.CreateTmp(x.dtype());
  Variable mask = helper.CreateTmp(x.dtype(), "mask");
  helper.Append(OpDesc("dropout")
                    .In("X", {x.name()})
                    .Out("Out", {out.name()})
                    .Out("Mask", {mask.name()})
                    .Set("dropout_prob", dropout_prob)
                    .Set("is_test", is_test)
                    .Set("fix_seed", seed != 0)
                    .Set("seed", int32_t(seed))
                    .Set("dropout_implementation", dropout_implementation));
  return out;
}

Variable flatten(const Variable& x, int axis) { return UnaryOp("flatten", x, {{"axis", int32_t(axis)}}); }

Variable transpose(const Variable& x, std::vector<int32_t> perm) {
  return UnaryOp("transpose", x, {{"axis", perm}});
}

Variable pad2d(const Variable& input, std::vector<int32_t> paddings, const std::string& mode,
               float pad_value) {
  return UnaryOp("pad2d", input, {{"paddings", paddings}, {"mode", mode}, {"pad_value", pad_value}});
}

Variable image_resize(const Variable& input, std::vector<int32_t> out_shape, float scale,
                      const std::string& resample, bool align_corners, int align_mode) {
  FLOTILLA_ENFORCE(resample == "BILINEAR" || resample == "NEAREST",
                   "layers::image_resize: resample must be BILINEAR or NEAREST, got '", resample, "'");
  FLOTILLA_ENFORCE(out_shape.size() == 2 || (out_shape.empty() && scale > 0),
                   "layers::image_resize: give out_shape {h, w} or a positive scale");
  const bool nearest = resample == "NEAREST";
  return UnaryOp(nearest ? "nearest_interp" : "bilinear_interp", input,
                 {{"out_h", out_shape.empty() ? int32_t{-1} : out_shape[0]},
                  {"out_w", out_shape.empty() ? int32_t{-1} : out_shape[1]},
                  {"scale", scale},
                  {"align_corners", align_corners},
                  {"align_mode", int32_t(align_mode)},
                  {"interp_method", std::string(nearest ? "nearest" : "bilinear")}});
}

Variable resize_bilinear(const Variable& input, std::vector<int32_t> out_shape, float scale,
                         bool align_corners, int align_mode) {
  return image_resize(input, std::move(out_shape), scale, "BILINEAR", align_corners, align_mode);
}

Variable resize_nearest(const Variable& input, std::vector<int32_t> out_shape, float scale,
                        bool align_corners) {
  return image_resize(input, std::move(out_shape), scale, "NEAREST", align_corners, 1);
}

Variable relu6(const Variable& x, float threshold) {
  return UnaryOp("relu6", x, {{"threshold", threshold}});
}

Variable hard_swish(const Variable& x, float threshold, float scale, float offset) {
  return UnaryOp("hard_swish", x, {{"threshold", threshold}, {"scale", scale}, {"offset", offset}});
}

Variable one_hot(const Variable& input, int depth) {
  LayerHelper helper("one_hot");
  Variable out = helper.CreateTmp(DType::kFloat32);
  helper.Append(OpDesc("one_hot").In("X", {input.name()}).Out("Out", {out.name()})
                    .Set("depth", int32_t(depth)));
  return out;
}

Variable label_smooth(const Variable& label, float epsilon, const Variable& prior_dist) {
  LayerHelper helper("label_smooth");
  Variable out = helper.CreateTmp(label.dtype());
  OpDesc op("label_smooth");
  op.In("X", {label.name()}).Out("Out", {out.name()}).Set("epsilon", epsilon);
  if (prior_dist.valid()) op.In("PriorDist", {prior_dist.name()});
  helper.Append(std::move(op));
  return out;
}

}  // namespace flotilla::layers
