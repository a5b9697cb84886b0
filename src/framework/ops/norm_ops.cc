// layer_norm and group_norm: normalisation over rows of X with per-row
// statistics, then a per-channel affine map (Paddle's slots):
//
//   layer_norm(X, Scale?, Bias?) -> Y, Mean [rows], Variance [rows]
//     rows = prod(X.dims[:begin_norm_axis]); Scale/Bias: [prod(dims[axis:])]
//   group_norm(X [N, C, ...], Scale? [C], Bias? [C]) -> Y, Mean [N, G], Variance [N, G]
//     rows = N * groups, each (C / groups) channels of one sample
//
// Both share one kernel: row r, element j has affine channel
// (r % groups) * channels_per_row + j / plane (plane = 1 for layer_norm).
#include <cmath>
#include <string>
#include <vector>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/grad_registration.h"
#include "framework/ops/ops.h"
#include "framework/ops/shape_checks.h"
#include "framework/ops/spatial_util.h"

namespace flotilla::ops {
namespace {

struct RowShape {
  int64_t rows = 0, len = 0;    // X as [rows, len]
  int64_t groups = 1;           // rows cycle through the groups
  int64_t plane = 1;            // elements per affine channel within a row
  int64_t channels = 0;         // length of Scale/Bias
  Dims stats;                   // Mean/Variance dims
  int64_t channel(int64_t r, int64_t j) const { return (r % groups) * (len / plane) + j / plane; }
};

template <typename Ctx>
RowShape LayerNormShape(const Ctx& ctx, const Dims& x) {
  const int axis = ctx.template Attr<int32_t>("begin_norm_axis");
  FLOTILLA_ENFORCE(axis >= 1 && axis < static_cast<int>(x.size()), ctx.Where(),
                   ": attribute begin_norm_axis (", axis, ") must be in [1, ", x.size(), ") for ",
                   DescribeInput(ctx, "X", x));
  RowShape s;
  s.rows = Product(x, 0, axis);
  s.len = Product(x, axis, x.size());
  s.channels = s.len;
  s.stats = {s.rows};
  return s;
}

template <typename Ctx>
RowShape GroupNormShape(const Ctx& ctx, const Dims& x) {
  FLOTILLA_ENFORCE(x.size() >= 2, ctx.Where(), ": ", DescribeInput(ctx, "X", x),
                   " must have rank >= 2, expected shape [N, C, ...]");
  const int64_t g = ctx.template Attr<int32_t>("groups");
  FLOTILLA_ENFORCE(g >= 1 && (x[1] < 0 || x[1] % g == 0), ctx.Where(), ": attribute groups (", g,
                   ") must divide the channels of ", DescribeInput(ctx, "X", x));
  RowShape s;
  s.groups = g;
  s.plane = Product(x, 2, x.size());
  s.rows = x[0] < 0 ? -1 : x[0] * g;
  s.len = (x[1] < 0 || s.plane < 0) ? -1 : x[1] / g * s.plane;
  s.channels = x[1];
  s.stats = {x[0], g};
  return s;
}

template <typename Ctx>
void CheckAffine(const Ctx& ctx, const std::string& slot, const Dims& d, int64_t channels) {
  FLOTILLA_ENFORCE(Numel(d) < 0 || channels < 0 || Numel(d) == channels, ctx.Where(), ": ",
                   DescribeInput(ctx, slot, d), " must hold ", channels,
                   " values (one per normalised channel), expected shape [", channels, "]");
}

template <typename T>
const T* OptionalInput(const ExecutionContext& ctx, const std::string& slot) {
  return ctx.HasInput(slot) ? ctx.Input(slot).data<T>() : nullptr;
}

template <typename T>
void Forward(ExecutionContext& ctx, const RowShape& s) {
  const Tensor& x = ctx.Input("X");
  const T* xp = x.data<T>();
  const T* scale = OptionalInput<T>(ctx, "Scale");
  const T* bias = OptionalInput<T>(ctx, "Bias");
  const double eps = ctx.Attr<float>("epsilon");
  Tensor* y = ctx.Output("Y");
  y->Resize(x.dims());
  T* yp = y->mutable_data<T>();
  Tensor* mean = ctx.Output("Mean");
  Tensor* var = ctx.Output("Variance");
  mean->Resize(s.stats);
  var->Resize(s.stats);
  T* mp = mean->mutable_data<T>();
  T* vp = var->mutable_data<T>();
  for (int64_t r = 0; r < s.rows; ++r) {
    const T* row = xp + r * s.len;
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < s.len; ++j) sum += row[j], sq += double(row[j]) * row[j];
    const double m = sum / double(s.len), v = std::max(0.0, sq / double(s.len) - m * m);
    const double inv = 1.0 / std::sqrt(v + eps);
    mp[r] = T(m), vp[r] = T(v);
    for (int64_t j = 0; j < s.len; ++j) {
      const int64_t c = s.channel(r, j);
      double out = (row[j] - m) * inv;
      if (scale != nullptr) out *= scale[c];
      if (bias != nullptr) out += bias[c];
      yp[r * s.len + j] = T(out);
    }
  }
}

template <typename T>
void Backward(ExecutionContext& ctx, const RowShape& s) {
  const Tensor& x = ctx.Input("X");
  const T* xp = x.data<T>();
  const T* dy = ctx.Input(GradVarName("Y")).data<T>();
  const T* mp = ctx.Input("Mean").data<T>();
  const T* vp = ctx.Input("Variance").data<T>();
  const T* scale = OptionalInput<T>(ctx, "Scale");
  const double eps = ctx.Attr<float>("epsilon");
  T* dx = GradOutput<T>(ctx, "X", x.dims());
  const Dims affine{s.channels};
  T* ds = ctx.HasInput("Scale") ? GradOutput<T>(ctx, "Scale", ctx.Input("Scale").dims()) : nullptr;
  T* db = ctx.HasInput("Bias") ? GradOutput<T>(ctx, "Bias", ctx.Input("Bias").dims()) : nullptr;
  if (ds != nullptr) std::fill(ds, ds + s.channels, T(0));
  if (db != nullptr) std::fill(db, db + s.channels, T(0));
  std::vector<double> dxhat(s.len);
  for (int64_t r = 0; r < s.rows; ++r) {
    const T* row = xp + r * s.len;
    const T* g = dy + r * s.len;
    const double inv = 1.0 / std::sqrt(double(vp[r]) + eps), m = mp[r];
    double mean_d = 0, mean_dx = 0;
    for (int64_t j = 0; j < s.len; ++j) {
      const int64_t c = s.channel(r, j);
      const double xhat = (row[j] - m) * inv;
      if (ds != nullptr) ds[c] += T(g[j] * xhat);
      if (db != nullptr) db[c] += g[j];
      dxhat[j] = scale != nullptr ? g[j] * double(scale[c]) : g[j];
      mean_d += dxhat[j];
      mean_dx += dxhat[j] * xhat;
    }
    if (dx == nullptr) continue;
    mean_d /= double(s.len), mean_dx /= double(s.len);
    for (int64_t j = 0; j < s.len; ++j) {
      const double xhat = (row[j] - m) * inv;
      dx[r * s.len + j] = T(inv * (dxhat[j] - mean_d - xhat * mean_dx));
    }
  }
}

template <RowShape (*Shape)(const InferShapeContext&, const Dims&)>
void InferShape(InferShapeContext& ctx) {
  RowShape s = Shape(ctx, ctx.InputDim("X"));
  for (const char* slot : {"Scale", "Bias"}) {
    if (ctx.HasInput(slot)) CheckAffine(ctx, slot, ctx.InputDim(slot), s.channels);
  }
  ctx.ShareDim("X", "Y");
  for (const char* slot : {"Mean", "Variance"}) {
    ctx.SetOutputDim(slot, s.stats);
    ctx.SetOutputDType(slot, ctx.InputDType("X"));
  }
}

template <RowShape (*Shape)(const ExecutionContext&, const Dims&)>
void Kernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  RowShape s = Shape(ctx, x.dims());
  for (const char* slot : {"Scale", "Bias"}) {
    if (ctx.HasInput(slot)) CheckAffine(ctx, slot, ctx.Input(slot).dims(), s.channels);
  }
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() { Forward<T>(ctx, s); });
}

template <RowShape (*Shape)(const ExecutionContext&, const Dims&)>
void GradKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  RowShape s = Shape(ctx, x.dims());
  CheckGradShape(ctx, ctx.Input(GradVarName("Y")), x.dims(), "Y");
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() { Backward<T>(ctx, s); });
}

// layer_norm and group_norm: X, Scale, Bias in; Y, Mean, Variance out.
const GradSlots kRowNormGrad = {.forward_inputs = {"X", "Scale", "Bias"},
                                .forward_outputs = {"Mean", "Variance"},
                                .output_grads = {"Y"},
                                .input_grads = {"X", "Scale", "Bias"}};

}  // namespace

void RegisterNormOps() {
  auto& r = OpRegistry::Global();
  RegisterKernelWithGrad(r, "layer_norm", InferShape<LayerNormShape<InferShapeContext>>,
                         Kernel<LayerNormShape<ExecutionContext>>, {{"begin_norm_axis", int32_t{1}}, {"epsilon", 1e-5f}},
                         kRowNormGrad, GradKernel<LayerNormShape<ExecutionContext>>);
  RegisterKernelWithGrad(r, "group_norm", InferShape<GroupNormShape<InferShapeContext>>,
                         Kernel<GroupNormShape<ExecutionContext>>,
                         {{"groups", int32_t{1}}, {"epsilon", 1e-5f}, {"data_layout", std::string("NCHW")}},
                         kRowNormGrad, GradKernel<GroupNormShape<ExecutionContext>>);
}

}  // namespace flotilla::ops
