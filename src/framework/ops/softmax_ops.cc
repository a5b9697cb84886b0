// softmax and softmax_with_cross_entropy.
//
// Both subtract the row maximum before exponentiating, so large logits never
// overflow. softmax_with_cross_entropy computes the loss from the log-sum-exp
// (not from log(softmax)), so a confident wrong prediction gives a large but
// finite loss instead of log(0).
#include <algorithm>
#include <cmath>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "framework/ops/input_checks.h"

namespace flotilla::ops {
namespace {

// A tensor seen as [pre, n, post] around one axis; row (p, q) is the n
// elements at offset p*n*post + q, stride post.
struct AxisView {
  int64_t pre = 1;
  int64_t n = 1;
  int64_t post = 1;
};

AxisView ViewAround(const Dims& dims, int axis) {
  return {Product(dims, 0, axis), dims[axis], Product(dims, axis + 1, dims.size())};
}

// y = softmax(x) over n elements `stride` apart; returns log Σ exp(x - max)
// and stores the max in *max_out.
template <typename T>
T SoftmaxRow(const T* x, T* y, int64_t n, int64_t stride, T* max_out) {
  T mx = x[0];
  for (int64_t j = 1; j < n; ++j) mx = std::max(mx, x[j * stride]);
  T sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    y[j * stride] = std::exp(x[j * stride] - mx);
    sum += y[j * stride];
  }
  T inv = T(1) / sum;
  for (int64_t j = 0; j < n; ++j) y[j * stride] *= inv;
  *max_out = mx;
  return std::log(sum);
}

// ---- softmax: Out = exp(X) / Σ exp(X) along `axis` ----

void SoftmaxShape(InferShapeContext& ctx) {
  Dims dims = ctx.InputDim("X");
  NormalizeAxis(ctx.Attr<int32_t>("axis"), static_cast<int>(dims.size()), ctx.Where());
  ctx.ShareDim("X", "Out");
}

template <typename T>
void SoftmaxForward(const Tensor& x, Tensor* out, int axis) {
  AxisView v = ViewAround(x.dims(), axis);
  const T* xp = x.data<T>();
  T* yp = out->mutable_data<T>();
  T mx;
  for (int64_t p = 0; p < v.pre; ++p) {
    for (int64_t q = 0; q < v.post; ++q) {
      int64_t off = p * v.n * v.post + q;
      SoftmaxRow(xp + off, yp + off, v.n, v.post, &mx);
    }
  }
}

void SoftmaxKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  FLOTILLA_ENFORCE(x.rank() > 0, ctx.Where(), ": X must have at least one dimension");
  int axis = NormalizeAxis(ctx.Attr<int32_t>("axis"), x.rank(), ctx.Where());
  Tensor* out = ctx.Output("Out");
  out->Resize(x.dims());
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() { SoftmaxForward<T>(x, out, axis); });
}

// dX = Out * (dOut - Σ dOut·Out) along the axis.
template <typename T>
void SoftmaxBackward(const Tensor& y, const Tensor& dy, Tensor* dx, int axis) {
  AxisView v = ViewAround(y.dims(), axis);
  const T* yp = y.data<T>();
  const T* gp = dy.data<T>();
  T* dp = dx->mutable_data<T>();
  for (int64_t p = 0; p < v.pre; ++p) {
    for (int64_t q = 0; q < v.post; ++q) {
      int64_t off = p * v.n * v.post + q;
      T dot = 0;
      for (int64_t j = 0; j < v.n; ++j) dot += yp[off + j * v.post] * gp[off + j * v.post];
      for (int64_t j = 0; j < v.n; ++j) {
        int64_t k = off + j * v.post;
        dp[k] = yp[k] * (gp[k] - dot);
      }
    }
  }
}

void SoftmaxGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& y = ctx.Input("Out");
  const Tensor& dy = ctx.Input("Out@GRAD");
  FLOTILLA_ENFORCE(dy.dims() == y.dims(), ctx.Where(), ": Out@GRAD has shape ",
                   DimsToString(dy.dims()), " but Out has ", DimsToString(y.dims()));
  int axis = NormalizeAxis(ctx.Attr<int32_t>("axis"), y.rank(), ctx.Where());
  Tensor* dx = ctx.Output("X@GRAD");
  dx->Resize(y.dims());
  VisitFloatDType(y.dtype(), ctx.Where(), [&]<typename T>() { SoftmaxBackward<T>(y, dy, dx, axis); });
}

std::vector<OpDesc> SoftmaxGrad(const OpDesc& fwd) {
  return GradOpBuilder(fwd, "softmax_grad").ForwardOutputs({"Out"}).OutputGrads({"Out"}).InputGrads({"X"});
}

// ---- softmax_with_cross_entropy: Softmax = softmax(Logits), Loss = -log Softmax[label] ----

void SwceShape(InferShapeContext& ctx) {
  Dims logits = ctx.InputDim("Logits");
  Dims label = ctx.InputDim("Label");
  int rank = static_cast<int>(logits.size());
  int axis = NormalizeAxis(ctx.Attr<int32_t>("axis"), rank, ctx.Where());
  FLOTILLA_ENFORCE(axis == rank - 1, ctx.Where(), ": attribute 'axis' must be the last axis (-1), got ",
                   ctx.Attr<int32_t>("axis"));
  FLOTILLA_ENFORCE(label.size() == logits.size(), ctx.Where(), ": Label has shape ",
                   DimsToString(label), " but Logits has ", DimsToString(logits),
                   "; ranks must match");
  ctx.ShareDim("Logits", "Softmax");
  logits.back() = 1;
  ctx.SetOutputDim("Loss", logits);
  ctx.SetOutputDType("Loss", ctx.InputDType("Logits"));
}

struct SwceAttrs {
  bool soft_label = false;
  int64_t ignore_index = -100;
};

// One row of C logits: writes its softmax and returns its loss.
template <typename T>
T SwceRow(const T* x, T* y, int64_t c, const T* label_row, int64_t label, const SwceAttrs& a) {
  T mx;
  T log_sum = SoftmaxRow(x, y, c, 1, &mx);
  if (a.soft_label) {
    T loss = 0;
    for (int64_t j = 0; j < c; ++j) loss -= label_row[j] * (x[j] - mx - log_sum);
    return loss;
  }
  if (label == a.ignore_index) return 0;
  return log_sum + mx - x[label];
}

template <typename T>
void SwceForward(ExecutionContext& ctx, const Tensor& logits, const Tensor& label,
                 const SwceAttrs& a) {
  int64_t c = logits.dims().back();
  int64_t rows = c == 0 ? 0 : logits.numel() / c;
  const int64_t* ids = a.soft_label ? nullptr : HardLabels(label, rows, ctx.Where());
  const T* soft = a.soft_label ? label.data<T>() : nullptr;
  const T* x = logits.data<T>();
  T* y = ctx.Output("Softmax")->mutable_data<T>();
  T* loss = ctx.Output("Loss")->mutable_data<T>();
  for (int64_t i = 0; i < rows; ++i) {
    int64_t l = ids ? ids[i] : 0;
    FLOTILLA_ENFORCE(a.soft_label || l == a.ignore_index || (l >= 0 && l < c), ctx.Where(),
                     ": label ", l, " of row ", i, " is out of range [0, ", c, ")");
    loss[i] = SwceRow(x + i * c, y + i * c, c, soft ? soft + i * c : nullptr, l, a);
  }
}

SwceAttrs ReadSwceAttrs(const ExecutionContext& ctx) {
  return {ctx.Attr<bool>("soft_label"), ctx.Attr<int64_t>("ignore_index")};
}

void SwceKernel(ExecutionContext& ctx) {
  const Tensor& logits = ctx.Input("Logits");
  const Tensor& label = ctx.Input("Label");
  FLOTILLA_ENFORCE(logits.rank() > 0, ctx.Where(), ": Logits must have at least one dimension");
  int axis = NormalizeAxis(ctx.Attr<int32_t>("axis"), logits.rank(), ctx.Where());
  FLOTILLA_ENFORCE(axis == logits.rank() - 1, ctx.Where(),
                   ": attribute 'axis' must be the last axis (-1), got ", ctx.Attr<int32_t>("axis"));
  SwceAttrs a = ReadSwceAttrs(ctx);
  if (a.soft_label) {
    FLOTILLA_ENFORCE(label.dims() == logits.dims(), ctx.Where(), ": soft Label has shape ",
                     DimsToString(label.dims()), " but Logits has ", DimsToString(logits.dims()));
    ExpectDType(label, logits.dtype(), ctx.Where(), "soft Label");
  }
  Dims loss_dims = logits.dims();
  loss_dims.back() = 1;
  ctx.Output("Softmax")->Resize(logits.dims());
  ctx.Output("Loss")->Resize(loss_dims);
  VisitFloatDType(logits.dtype(), ctx.Where(),
                  [&]<typename T>() { SwceForward<T>(ctx, logits, label, a); });
}

// dLogits = (Softmax - onehot(label)) * dLoss; ignored rows get zeros.
template <typename T>
void SwceBackward(ExecutionContext& ctx, const Tensor& sm, const Tensor& label, Tensor* dx,
                  const SwceAttrs& a) {
  int64_t c = sm.dims().back();
  int64_t rows = c == 0 ? 0 : sm.numel() / c;
  const int64_t* ids = a.soft_label ? nullptr : HardLabels(label, rows, ctx.Where());
  const T* soft = a.soft_label ? label.data<T>() : nullptr;
  const T* dl = ctx.Input("Loss@GRAD").data<T>();
  const T* y = sm.data<T>();
  T* d = dx->mutable_data<T>();
  for (int64_t i = 0; i < rows; ++i) {
    const T* yr = y + i * c;
    T* dr = d + i * c;
    if (!a.soft_label && ids[i] == a.ignore_index) {
      std::fill(dr, dr + c, T(0));
      continue;
    }
    for (int64_t j = 0; j < c; ++j) dr[j] = (yr[j] - (soft ? soft[i * c + j] : T(0))) * dl[i];
    if (!a.soft_label) dr[ids[i]] -= dl[i];
  }
}

void SwceGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput("Logits@GRAD")) return;
  const Tensor& sm = ctx.Input("Softmax");
  Tensor* dx = ctx.Output("Logits@GRAD");
  dx->Resize(sm.dims());
  dx->set_dtype(sm.dtype());
  if (!ctx.HasInput("Loss@GRAD")) return dx->SetZero();
  SwceAttrs a = ReadSwceAttrs(ctx);
  VisitFloatDType(sm.dtype(), ctx.Where(),
                  [&]<typename T>() { SwceBackward<T>(ctx, sm, ctx.Input("Label"), dx, a); });
}

std::vector<OpDesc> SwceGrad(const OpDesc& fwd) {
  return GradOpBuilder(fwd, "softmax_with_cross_entropy_grad")
      .ForwardInputs({"Label"})
      .ForwardOutputs({"Softmax"})
      .OutputGrads({"Loss"})
      .InputGrads({"Logits"});
}

}  // namespace

void RegisterSoftmaxOps() {
  auto& r = OpRegistry::Global();
  r.Register({.type = "softmax",
              .infer_shape = SoftmaxShape,
              .kernels = {{Place::Kind::kCPU, SoftmaxKernel}},
              .grad_maker = SoftmaxGrad,
              .default_attrs = {{"axis", int32_t{-1}}}});
  r.Register({.type = "softmax_grad",
              .infer_shape = [](InferShapeContext& ctx) { ctx.ShareDim("Out", "X@GRAD"); },
              .kernels = {{Place::Kind::kCPU, SoftmaxGradKernel}},
              .default_attrs = {{"axis", int32_t{-1}}}});
  AttributeMap swce_attrs = {{"soft_label", false},
                             {"ignore_index", int64_t{-100}},
                             {"axis", int32_t{-1}},
                             {"numeric_stable_mode", true}};
  r.Register({.type = "softmax_with_cross_entropy",
              .infer_shape = SwceShape,
              .kernels = {{Place::Kind::kCPU, SwceKernel}},
              .grad_maker = SwceGrad,
              .default_attrs = swce_attrs,
              .no_grad_inputs = {"Label"}});
  r.Register({.type = "softmax_with_cross_entropy_grad",
              .infer_shape = [](InferShapeContext& ctx) { ctx.ShareDim("Softmax", "Logits@GRAD"); },
              .kernels = {{Place::Kind::kCPU, SwceGradKernel}},
              .default_attrs = swce_attrs});
}

}  // namespace flotilla::ops
