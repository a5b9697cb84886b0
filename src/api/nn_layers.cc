#include "flotilla/api/nn_layers.h"

#include <cmath>

#include "api/layer_helper.h"
#include "api/nn_ops.h"
#include "flotilla/api/layers.h"

namespace flotilla::layers {

using internal::Channels;
using internal::ConvWindow;
using internal::LayerHelper;
using internal::UnaryOp;

namespace {

// The bias [channels] (0) of a layer, or an invalid Variable when bias_attr
// is ParamAttr::None().
Variable ChannelBias(LayerHelper& helper, const ParamAttr& bias_attr, int64_t channels, DType dtype) {
  if (!bias_attr.enabled) return {};
  return helper.CreateParameter(bias_attr, {channels}, dtype, true,
                                std::make_shared<initializer::Constant>(0.0));
}

// Paddle's conv2d_transpose without filter_size: the filter that turns the
// input's H, W into output_size at this stride, padding and dilation.
Size2 FilterForOutput(const Variable& input, const std::vector<int32_t>& output_size,
                      const ConvWindow& w) {
  const Dims& d = input.shape();
  FLOTILLA_ENFORCE(output_size.size() == 2 && d[2] > 0 && d[3] > 0,
                   "layers::conv2d_transpose: without filter_size, output_size {h, w} and the ",
                   "input's H, W must be known (input '", input.name(), "' is ", DimsToString(d), ")");
  FLOTILLA_ENFORCE(w.padding.algorithm == "EXPLICIT",
                   "layers::conv2d_transpose: without filter_size, padding must be explicit numbers");
  const auto& p = w.padding.values;
  const int pad_h = p.size() == 4 ? p[0] + p[1] : 2 * p[0];
  const int pad_w = p.size() == 4 ? p[2] + p[3] : 2 * p[1];
  auto k = [](int64_t out, int64_t in, int s, int pad, int dil) {
    return int((out - (in - 1) * s + pad - 1) / dil + 1);
  };
  Size2 f(k(output_size[0], d[2], w.stride.h, pad_h, w.dilation.h),
          k(output_size[1], d[3], w.stride.w, pad_w, w.dilation.w));
  FLOTILLA_ENFORCE(f.h >= 1 && f.w >= 1, "layers::conv2d_transpose: output_size {", output_size[0], ", ",
                   output_size[1], "} is too small for input '", input.name(), "' ", DimsToString(d));
  return f;
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
  Variable b = ChannelBias(helper, bias_attr, num_filters, input.dtype());
  Variable out = Conv2dOp(helper, input, w, b, {stride, padding, dilation, groups});
  return helper.Activate(out, act);
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
  const ConvWindow window{stride, padding, dilation, groups};
  if (filter_size.h <= 0 || filter_size.w <= 0) filter_size = FilterForOutput(input, output_size, window);
  LayerHelper helper(name.empty() ? "conv2d_transpose" : name);
  const double fan_in = double(filter_size.h) * filter_size.w * double(c) / groups;
  Variable w = helper.CreateParameter(
      param_attr, {c, num_filters / groups, filter_size.h, filter_size.w}, input.dtype(), false,
      std::make_shared<initializer::Normal>(0.0, std::sqrt(2.0 / fan_in)));
  Variable b = ChannelBias(helper, bias_attr, num_filters, input.dtype());
  Variable out = Conv2dTransposeOp(helper, input, w, b, window, std::move(output_size), 0);
  return helper.Activate(out, act);
}

Variable pool2d(const Variable& input, Size2 pool_size, const std::string& pool_type,
                Size2 pool_stride, Padding pool_padding, bool global_pooling, bool ceil_mode,
                bool exclusive, const std::string& name) {
  LayerHelper helper(name.empty() ? "pool2d" : name);
  Variable out = helper.CreateTmp(input.dtype());
  OpDesc op("pool2d");
  op.In("X", {input.name()}).Out("Out", {out.name()});
  FLOTILLA_ENFORCE(global_pooling || (pool_size.h > 0 && pool_size.w > 0), "layers::pool2d: pool_size ",
                   "must be positive unless global_pooling is set (input '", input.name(), "')");
  op.Set("strides", pool_stride.vec())
      .Set("paddings", pool_padding.values)
      .Set("padding_algorithm", pool_padding.algorithm)
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
  const bool fuse_relu = o.act == "relu";
  Variable y = internal::BatchNormOp(helper, input, scale, bias, mean, var,
                                     {o.momentum, o.epsilon, o.is_test, o.use_global_stats, fuse_relu});
  return fuse_relu ? y : helper.Activate(y, o.act);
}

namespace {

Variable RowNorm(const std::string& type, const Variable& input, int64_t channels, bool scale,
                 bool shift, const ParamAttr& param_attr, const ParamAttr& bias_attr,
                 const std::string& act, AttributeMap attrs) {
  LayerHelper helper(type);
  Variable s, b;
  if (scale) {
    s = helper.CreateParameter(param_attr, {channels}, input.dtype(), false,
                               std::make_shared<initializer::Constant>(1.0));
  }
  if (shift) b = ChannelBias(helper, bias_attr, channels, input.dtype());
  return helper.Activate(internal::RowNormOp(helper, type, input, s, b, std::move(attrs)), act);
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
