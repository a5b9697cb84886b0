// cross_entropy (on probabilities) and sigmoid_cross_entropy_with_logits.
//
// cross_entropy takes probabilities, so it clips them at a tiny epsilon
// before the log (as Paddle does): a zero probability of the true class
// gives a large finite loss, never inf, and the gradient stays finite.
#include <algorithm>
#include <cmath>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "framework/ops/input_checks.h"

namespace flotilla::ops {
namespace {

template <typename T>
T ClipProb(T p) {
  return std::max(p, T(1e-20));
}

// ---- cross_entropy: Y = -log X[label] (hard) or -Σ Label·log X (soft) ----

struct CeAttrs {
  bool soft_label = false;
  int64_t ignore_index = -100;
};

CeAttrs ReadCeAttrs(const ExecutionContext& ctx) {
  return {ctx.Attr<bool>("soft_label"), ctx.Attr<int64_t>("ignore_index")};
}

void CrossEntropyShape(InferShapeContext& ctx) {
  Dims x = ctx.InputDim("X");
  Dims label = ctx.InputDim("Label");
  FLOTILLA_ENFORCE(!x.empty() && label.size() == x.size(), ctx.Where(), ": Label has shape ",
                   DimsToString(label), " but X has ", DimsToString(x), "; ranks must match");
  x.back() = 1;
  ctx.SetOutputDim("Y", x);
  ctx.SetOutputDType("Y", ctx.InputDType("X"));
}

// Validates Label against X and returns the number of rows.
int64_t CheckCeLabel(const ExecutionContext& ctx, const Tensor& x, const Tensor& label,
                     const CeAttrs& a) {
  FLOTILLA_ENFORCE(x.rank() > 0, ctx.Where(), ": X must have at least one dimension");
  int64_t c = x.dims().back();
  int64_t rows = c == 0 ? 0 : x.numel() / c;
  if (a.soft_label) {
    FLOTILLA_ENFORCE(label.dims() == x.dims(), ctx.Where(), ": soft Label has shape ",
                     DimsToString(label.dims()), " but X has ", DimsToString(x.dims()));
    ExpectDType(label, x.dtype(), ctx.Where(), "soft Label");
    return rows;
  }
  const int64_t* ids = HardLabels(label, rows, ctx.Where());
  for (int64_t i = 0; i < rows; ++i) {
    FLOTILLA_ENFORCE(ids[i] == a.ignore_index || (ids[i] >= 0 && ids[i] < c), ctx.Where(),
                     ": label ", ids[i], " of row ", i, " is out of range [0, ", c, ")");
  }
  return rows;
}

template <typename T>
void CrossEntropyForward(const Tensor& x, const Tensor& label, int64_t rows, const CeAttrs& a,
                         T* y) {
  int64_t c = x.dims().back();
  const T* xp = x.data<T>();
  for (int64_t i = 0; i < rows; ++i) {
    const T* xr = xp + i * c;
    if (a.soft_label) {
      const T* lr = label.data<T>() + i * c;
      T sum = 0;
      for (int64_t j = 0; j < c; ++j) sum -= lr[j] * std::log(ClipProb(xr[j]));
      y[i] = sum;
      continue;
    }
    int64_t l = label.data<int64_t>()[i];
    y[i] = l == a.ignore_index ? T(0) : -std::log(ClipProb(xr[l]));
  }
}

void CrossEntropyKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& label = ctx.Input("Label");
  CeAttrs a = ReadCeAttrs(ctx);
  int64_t rows = CheckCeLabel(ctx, x, label, a);
  Dims y_dims = x.dims();
  y_dims.back() = 1;
  Tensor* y = ctx.Output("Y");
  y->Resize(y_dims);
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    CrossEntropyForward<T>(x, label, rows, a, y->mutable_data<T>());
  });
}

// dX = -dY · Label / X (soft), or -dY / X at the label only (hard).
template <typename T>
void CrossEntropyBackward(const Tensor& x, const Tensor& label, const T* dy, int64_t rows,
                          const CeAttrs& a, T* dx) {
  int64_t c = x.dims().back();
  const T* xp = x.data<T>();
  for (int64_t i = 0; i < rows; ++i) {
    const T* xr = xp + i * c;
    T* dr = dx + i * c;
    if (a.soft_label) {
      const T* lr = label.data<T>() + i * c;
      for (int64_t j = 0; j < c; ++j) dr[j] = -dy[i] * lr[j] / ClipProb(xr[j]);
      continue;
    }
    std::fill(dr, dr + c, T(0));
    int64_t l = label.data<int64_t>()[i];
    if (l != a.ignore_index) dr[l] = -dy[i] / ClipProb(xr[l]);
  }
}

void CrossEntropyGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& label = ctx.Input("Label");
  CeAttrs a = ReadCeAttrs(ctx);
  int64_t rows = CheckCeLabel(ctx, x, label, a);
  const Tensor& dy = ctx.Input("Y@GRAD");
  FLOTILLA_ENFORCE(dy.numel() == rows, ctx.Where(), ": Y@GRAD has shape ",
                   DimsToString(dy.dims()), " but X has ", rows, " rows");
  Tensor* dx = ctx.Output("X@GRAD");
  dx->Resize(x.dims());
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    CrossEntropyBackward<T>(x, label, dy.data<T>(), rows, a, dx->mutable_data<T>());
  });
}

// ---- sigmoid_cross_entropy_with_logits: elementwise logistic loss ----
//
// Out = max(x, 0) - x·z + log(1 + exp(-|x|)), the overflow-free form of
// -z·log σ(x) - (1 - z)·log(1 - σ(x)). Elements whose label equals
// ignore_index give 0; with normalize, every element is divided by the
// number of non-ignored labels.

void SigmoidCeShape(InferShapeContext& ctx) {
  Dims x = ctx.InputDim("X");
  Dims label = ctx.InputDim("Label");
  FLOTILLA_ENFORCE(DimsCompatible(x, label) || DimsCompatible(label, x), ctx.Where(),
                   ": Label has shape ", DimsToString(label), " but X has ", DimsToString(x));
  ctx.ShareDim("X", "Out");
}

struct SigmoidCeAttrs {
  int64_t ignore_index = -100;
  bool normalize = false;
};

SigmoidCeAttrs ReadSigmoidCeAttrs(const ExecutionContext& ctx) {
  return {ctx.Attr<int64_t>("ignore_index"), ctx.Attr<bool>("normalize")};
}

void CheckSigmoidCeInputs(const ExecutionContext& ctx, const Tensor& x, const Tensor& label) {
  FLOTILLA_ENFORCE(label.dims() == x.dims(), ctx.Where(), ": Label has shape ",
                   DimsToString(label.dims()), " but X has ", DimsToString(x.dims()),
                   "; they must match");
  ExpectDType(label, x.dtype(), ctx.Where(), "Label");
}

// 1 / (number of labels != ignore_index), or 1 without normalize.
template <typename T>
T SigmoidCeScale(const T* z, int64_t n, const SigmoidCeAttrs& a) {
  if (!a.normalize) return T(1);
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += z[i] != T(a.ignore_index);
  return T(1) / std::max<T>(T(count), T(1e-5));
}

template <typename T>
void SigmoidCeForward(const Tensor& x, const Tensor& label, const SigmoidCeAttrs& a, T* out) {
  const T* xp = x.data<T>();
  const T* z = label.data<T>();
  T scale = SigmoidCeScale(z, x.numel(), a);
  for (int64_t i = 0; i < x.numel(); ++i) {
    T v = xp[i];
    T loss = std::max(v, T(0)) - v * z[i] + std::log1p(std::exp(-std::abs(v)));
    out[i] = z[i] == T(a.ignore_index) ? T(0) : loss * scale;
  }
}

void SigmoidCeKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& label = ctx.Input("Label");
  CheckSigmoidCeInputs(ctx, x, label);
  SigmoidCeAttrs a = ReadSigmoidCeAttrs(ctx);
  Tensor* out = ctx.Output("Out");
  out->Resize(x.dims());
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    SigmoidCeForward<T>(x, label, a, out->mutable_data<T>());
  });
}

// dX = (σ(x) - z) · dOut (scaled as the forward), 0 where ignored.
template <typename T>
void SigmoidCeBackward(const Tensor& x, const Tensor& label, const T* dout,
                       const SigmoidCeAttrs& a, T* dx) {
  const T* xp = x.data<T>();
  const T* z = label.data<T>();
  T scale = SigmoidCeScale(z, x.numel(), a);
  for (int64_t i = 0; i < x.numel(); ++i) {
    T sig = T(1) / (T(1) + std::exp(-xp[i]));
    dx[i] = z[i] == T(a.ignore_index) ? T(0) : (sig - z[i]) * dout[i] * scale;
  }
}

void SigmoidCeGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& label = ctx.Input("Label");
  CheckSigmoidCeInputs(ctx, x, label);
  const Tensor& dout = ctx.Input("Out@GRAD");
  FLOTILLA_ENFORCE(dout.dims() == x.dims(), ctx.Where(), ": Out@GRAD has shape ",
                   DimsToString(dout.dims()), " but X has ", DimsToString(x.dims()));
  SigmoidCeAttrs a = ReadSigmoidCeAttrs(ctx);
  Tensor* dx = ctx.Output("X@GRAD");
  dx->Resize(x.dims());
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    SigmoidCeBackward<T>(x, label, dout.data<T>(), a, dx->mutable_data<T>());
  });
}

// A loss of X against Label (which has no gradient), output `loss`.
void RegisterLoss(OpRegistry& r, const std::string& type, InferShapeFn shape, KernelFn forward,
                  AttributeMap defaults, const std::string& loss, KernelFn backward) {
  r.RegisterWithGrad({.type = type,
                      .infer_shape = std::move(shape),
                      .kernels = {{Place::Kind::kCPU, std::move(forward)}},
                      .default_attrs = std::move(defaults),
                      .no_grad_inputs = {"Label"}},
                     {.forward_inputs = {"X", "Label"}, .output_grads = {loss}, .input_grads = {"X"}},
                     std::move(backward));
}

}  // namespace

void RegisterLossOps() {
  auto& r = OpRegistry::Global();
  RegisterLoss(r, "cross_entropy", CrossEntropyShape, CrossEntropyKernel,
               {{"soft_label", false}, {"ignore_index", int64_t{-100}}}, "Y", CrossEntropyGradKernel);
  RegisterLoss(r, "sigmoid_cross_entropy_with_logits", SigmoidCeShape, SigmoidCeKernel,
               {{"ignore_index", int64_t{-100}}, {"normalize", false}}, "Out", SigmoidCeGradKernel);
}

}  // namespace flotilla::ops
