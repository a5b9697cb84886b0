// Optimizer ops: sgd, momentum, adam, adagrad. Not differentiable.
//
// Each updates Param (and its accumulators) into ParamOut (and the matching
// *Out slots), which normally name the same variables: the update is then in
// place. When an output names another variable it first receives a copy of
// the input and is updated there, leaving the input untouched.
//
// Grad may be dense or a SelectedRows (sparse embedding gradient). Sparse
// gradients are merged first (duplicate rows summed). Then:
//   sgd, adagrad     update only the listed rows — exactly what the dense
//                    update with zero gradients elsewhere would do;
//   momentum         updates every row (velocity decays where the gradient is
//                    absent), as Paddle does;
//   adam             updates every row when lazy_mode is false (Paddle's
//                    default, identical to a dense gradient), and only the
//                    listed rows, moments included, when lazy_mode is true.
#include <algorithm>
#include <cmath>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "framework/ops/input_checks.h"

namespace flotilla::ops {
namespace {

// The gradient as seen by an update rule: dense, or merged unique rows.
struct GradInput {
  bool sparse = false;
  Tensor dense;        // shares the input's buffer, or a densified sparse grad
  SelectedRows rows;   // merged; used when sparse
};

const Tensor& CheckedParam(const ExecutionContext& ctx) {
  const Tensor& p = ctx.Input("Param");
  FLOTILLA_ENFORCE(p.rank() >= 1, ctx.Where(), ": Param must have at least one dimension");
  VisitFloatDType(p.dtype(), ctx.Where() + " Param", []<typename T>() {});
  return p;
}

void CheckSparseGrad(const ExecutionContext& ctx, const SelectedRows& g, const Tensor& param) {
  int64_t height = param.dim(0);
  int64_t width = param.numel() / std::max<int64_t>(height, 1);
  FLOTILLA_ENFORCE(g.height() == height && g.row_width() == width, ctx.Where(),
                   ": sparse Grad has height ", g.height(), " and row width ", g.row_width(),
                   " but Param ", DimsToString(param.dims()), " needs ", height, " and ", width);
  ExpectDType(g.value(), param.dtype(), ctx.Where(), "Grad");
  for (int64_t r : g.rows()) {
    FLOTILLA_ENFORCE(r >= 0 && r < height, ctx.Where(), ": sparse Grad row ", r,
                     " is out of range for Param with ", height, " rows");
  }
}

// Reads Grad; with `densify` a sparse gradient becomes a dense one.
GradInput ReadGrad(const ExecutionContext& ctx, const Tensor& param, bool densify) {
  ScopeVar* var = ctx.InputVar("Grad");
  FLOTILLA_ENFORCE(var != nullptr, ctx.Where(), ": input Grad is missing");
  GradInput g;
  if (!var->IsSelectedRows()) {
    g.dense = ctx.Input("Grad");
    FLOTILLA_ENFORCE(g.dense.dims() == param.dims(), ctx.Where(), ": Grad has shape ",
                     DimsToString(g.dense.dims()), " but Param has ", DimsToString(param.dims()));
    ExpectDType(g.dense, param.dtype(), ctx.Where(), "Grad");
    return g;
  }
  CheckSparseGrad(ctx, var->GetSelectedRows(), param);
  g.rows = var->GetSelectedRows().MergeRows();
  g.sparse = !densify;
  if (densify) g.dense = g.rows.ToDense().Reshape(param.dims());
  return g;
}

// Calls fn(i, g_i) for every element i of Param that has a gradient.
template <typename T, typename Fn>
void ForEachGrad(const GradInput& g, Fn&& fn) {
  if (!g.sparse) {
    const T* gp = g.dense.data<T>();
    for (int64_t i = 0; i < g.dense.numel(); ++i) fn(i, gp[i]);
    return;
  }
  int64_t width = g.rows.row_width();
  const T* v = g.rows.value().data<T>();
  for (size_t r = 0; r < g.rows.rows().size(); ++r) {
    int64_t base = g.rows.rows()[r] * width;
    for (int64_t j = 0; j < width; ++j) fn(base + j, v[r * width + j]);
  }
}

// The output of `in_slot` (`in_slot` + "Out"), holding the input's values.
template <typename T>
T* UpdatedOutput(const ExecutionContext& ctx, const std::string& in_slot, const Tensor& param) {
  const Tensor& in = ctx.Input(in_slot);
  if (in_slot != "Param") {
    FLOTILLA_ENFORCE(in.dims() == param.dims(), ctx.Where(), ": ", in_slot, " has shape ",
                     DimsToString(in.dims()), " but Param has ", DimsToString(param.dims()));
    ExpectDType(in, param.dtype(), ctx.Where(), in_slot);
  }
  Tensor* out = ctx.Output(in_slot + "Out");
  if (out != &in && !out->SharesBufferWith(in)) out->CopyFrom(in);
  return out->data<T>();
}

double LearningRate(const ExecutionContext& ctx) {
  return ScalarValue(ctx.Input("LearningRate"), ctx.Where(), "LearningRate");
}

// Writes a one-element output in the dtype of `like`.
void WriteScalar(Tensor* out, const Tensor& like, double value) {
  out->Resize({1});
  VisitDType(like.dtype(), [&]<typename T>() { out->mutable_data<T>()[0] = static_cast<T>(value); });
}

// ---- sgd: p -= lr · g ----

void SgdKernel(ExecutionContext& ctx) {
  const Tensor& param = CheckedParam(ctx);
  GradInput g = ReadGrad(ctx, param, false);
  double lr = LearningRate(ctx);
  VisitFloatDType(param.dtype(), ctx.Where(), [&]<typename T>() {
    T* p = UpdatedOutput<T>(ctx, "Param", param);
    T rate = static_cast<T>(lr);
    ForEachGrad<T>(g, [&](int64_t i, T gi) { p[i] -= rate * gi; });
  });
}

// ---- momentum: v = mu·v + g; p -= lr · (nesterov ? g + mu·v : v) ----

void MomentumKernel(ExecutionContext& ctx) {
  const Tensor& param = CheckedParam(ctx);
  GradInput g = ReadGrad(ctx, param, true);
  double lr = LearningRate(ctx);
  bool nesterov = ctx.Attr<bool>("use_nesterov");
  VisitFloatDType(param.dtype(), ctx.Where(), [&]<typename T>() {
    T* p = UpdatedOutput<T>(ctx, "Param", param);
    T* v = UpdatedOutput<T>(ctx, "Velocity", param);
    T mu = static_cast<T>(ctx.Attr<double>("mu")), rate = static_cast<T>(lr);
    ForEachGrad<T>(g, [&](int64_t i, T gi) {
      v[i] = mu * v[i] + gi;
      p[i] -= rate * (nesterov ? gi + mu * v[i] : v[i]);
    });
  });
}

// ---- adam ----
//   m1 = β1·m1 + (1-β1)·g;  m2 = β2·m2 + (1-β2)·g²
//   p -= lr·√(1-β2ᵗ)/(1-β1ᵗ) · m1 / (√m2 + ε·√(1-β2ᵗ))
// with βᵗ read from Beta1Pow/Beta2Pow, which are then multiplied by β.

struct AdamCoeffs {
  double beta1, beta2, epsilon, beta1_pow, beta2_pow;
};

AdamCoeffs ReadAdamCoeffs(const ExecutionContext& ctx) {
  AdamCoeffs c{ctx.Attr<double>("beta1"), ctx.Attr<double>("beta2"), ctx.Attr<double>("epsilon"),
               ScalarValue(ctx.Input("Beta1Pow"), ctx.Where(), "Beta1Pow"),
               ScalarValue(ctx.Input("Beta2Pow"), ctx.Where(), "Beta2Pow")};
  FLOTILLA_ENFORCE(c.beta1_pow < 1.0, ctx.Where(), ": Beta1Pow must be < 1, got ", c.beta1_pow);
  return c;
}

template <typename T>
void AdamUpdate(ExecutionContext& ctx, const Tensor& param, const GradInput& g, double lr,
                const AdamCoeffs& c) {
  T* p = UpdatedOutput<T>(ctx, "Param", param);
  T* m1 = UpdatedOutput<T>(ctx, "Moment1", param);
  T* m2 = UpdatedOutput<T>(ctx, "Moment2", param);
  T b1 = static_cast<T>(c.beta1), b2 = static_cast<T>(c.beta2);
  T bias2 = static_cast<T>(std::sqrt(1.0 - c.beta2_pow));
  T rate = static_cast<T>(lr * std::sqrt(1.0 - c.beta2_pow) / (1.0 - c.beta1_pow));
  T eps = static_cast<T>(c.epsilon) * bias2;
  ForEachGrad<T>(g, [&](int64_t i, T gi) {
    m1[i] = b1 * m1[i] + (T(1) - b1) * gi;
    m2[i] = b2 * m2[i] + (T(1) - b2) * gi * gi;
    p[i] -= rate * m1[i] / (std::sqrt(m2[i]) + eps);
  });
}

void AdamKernel(ExecutionContext& ctx) {
  const Tensor& param = CheckedParam(ctx);
  GradInput g = ReadGrad(ctx, param, !ctx.Attr<bool>("lazy_mode"));
  double lr = LearningRate(ctx);
  AdamCoeffs c = ReadAdamCoeffs(ctx);
  VisitFloatDType(param.dtype(), ctx.Where(), [&]<typename T>() { AdamUpdate<T>(ctx, param, g, lr, c); });
  if (ctx.HasOutput("Beta1PowOut")) {
    WriteScalar(ctx.Output("Beta1PowOut"), ctx.Input("Beta1Pow"), c.beta1_pow * c.beta1);
  }
  if (ctx.HasOutput("Beta2PowOut")) {
    WriteScalar(ctx.Output("Beta2PowOut"), ctx.Input("Beta2Pow"), c.beta2_pow * c.beta2);
  }
}

// ---- adagrad: m += g²; p -= lr · g / (√m + ε) ----

void AdagradKernel(ExecutionContext& ctx) {
  const Tensor& param = CheckedParam(ctx);
  GradInput g = ReadGrad(ctx, param, false);
  double lr = LearningRate(ctx);
  VisitFloatDType(param.dtype(), ctx.Where(), [&]<typename T>() {
    T* p = UpdatedOutput<T>(ctx, "Param", param);
    T* m = UpdatedOutput<T>(ctx, "Moment", param);
    T eps = static_cast<T>(ctx.Attr<double>("epsilon")), rate = static_cast<T>(lr);
    ForEachGrad<T>(g, [&](int64_t i, T gi) {
      m[i] += gi * gi;
      p[i] -= rate * gi / (std::sqrt(m[i]) + eps);
    });
  });
}

// Outputs `<slot>Out` take the shape and dtype of inputs `<slot>`.
InferShapeFn ShareStateShapes(std::vector<std::string> slots) {
  return [slots](InferShapeContext& ctx) {
    for (const auto& s : slots) {
      if (ctx.HasOutput(s + "Out")) ctx.ShareDim(s, s + "Out");
    }
  };
}

void RegisterOptimizer(const std::string& type, KernelFn kernel, std::vector<std::string> state,
                       AttributeMap attrs) {
  state.insert(state.begin(), "Param");
  OpRegistry::Global().Register({.type = type,
                                 .infer_shape = ShareStateShapes(state),
                                 .kernels = {{Place::Kind::kCPU, std::move(kernel)}},
                                 .default_attrs = std::move(attrs)});
}

}  // namespace

void RegisterOptimizerOps() {
  RegisterOptimizer("sgd", SgdKernel, {}, {});
  RegisterOptimizer("momentum", MomentumKernel, {"Velocity"},
                    {{"mu", 0.9f}, {"use_nesterov", false}});
  RegisterOptimizer("adam", AdamKernel, {"Moment1", "Moment2", "Beta1Pow", "Beta2Pow"},
                    {{"beta1", 0.9f}, {"beta2", 0.999f}, {"epsilon", 1e-8f}, {"lazy_mode", false}});
  RegisterOptimizer("adagrad", AdagradKernel, {"Moment"}, {{"epsilon", 1e-6f}});
}

}  // namespace flotilla::ops
