// Activations relu, tanh, sigmoid, square, softsign, sign, relu6, hard_swish,
// and scale.
//
// Like Paddle, relu/tanh/sigmoid differentiate through Out (their derivative
// is a function of the output), so backward keeps Out alive rather than X;
// square differentiates through X. Each activation is a functor struct whose
// static inline functions the shared loops instantiate, so the per-element
// work is inlined (no virtual or std::function calls per element).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"

namespace flotilla::ops {
namespace {

// Fwd(x) is the activation; Grad(v, g) is dX given g = dOut and v = Out
// when kGradUsesOut, else v = X.
struct Relu {
  static constexpr const char* kName = "relu";
  static constexpr bool kGradUsesOut = true;
  template <typename T> static T Fwd(T x) { return x > T(0) ? x : T(0); }
  template <typename T> static T Grad(T out, T g) { return out > T(0) ? g : T(0); }
};

// Clamps |x| to k in the integer domain: a float comparison would keep the
// compiler from vectorising (it may trap under strict IEEE rules), integer
// ones do not. NaN passes through unchanged.
inline float ClampMagnitude(float x, float k) {
  const int32_t bits = std::bit_cast<int32_t>(x);
  const int32_t mag = bits & 0x7fffffff, limit = std::bit_cast<int32_t>(k);
  const int32_t clamped = mag < limit ? mag : limit;
  const int32_t kept = mag > 0x7f800000 ? mag : clamped;
  return std::bit_cast<float>((bits & static_cast<int32_t>(0x80000000u)) | kept);
}

// tanh for float as a clamped rational polynomial (the approximation Eigen
// uses): plain arithmetic the compiler vectorises, within a few ulp of
// std::tanh, where a libm call per element would dominate an mlp step.
inline float FastTanh(float x) {
  x = ClampMagnitude(x, 7.90531110763549805f);  // |tanh| rounds to 1 beyond
  const float x2 = x * x;
  float p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  float q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  return x * p / q;
}

struct Tanh {
  static constexpr const char* kName = "tanh";
  static constexpr bool kGradUsesOut = true;
  template <typename T> static T Fwd(T x) {
    if constexpr (std::is_same_v<T, float>) {
      return FastTanh(x);
    } else {
      return std::tanh(x);
    }
  }
  template <typename T> static T Grad(T out, T g) { return g * (T(1) - out * out); }
};

struct Sigmoid {
  static constexpr const char* kName = "sigmoid";
  static constexpr bool kGradUsesOut = true;
  template <typename T> static T Fwd(T x) { return T(1) / (T(1) + std::exp(-x)); }
  template <typename T> static T Grad(T out, T g) { return g * out * (T(1) - out); }
};

struct Square {
  static constexpr const char* kName = "square";
  static constexpr bool kGradUsesOut = false;
  template <typename T> static T Fwd(T x) { return x * x; }
  template <typename T> static T Grad(T x, T g) { return T(2) * x * g; }
};

// x / (1 + |x|); its derivative 1 / (1 + |x|)^2 reads X.
struct Softsign {
  static constexpr const char* kName = "softsign";
  static constexpr bool kGradUsesOut = false;
  template <typename T> static T Fwd(T x) { return x / (T(1) + std::abs(x)); }
  template <typename T> static T Grad(T x, T g) {
    const T d = T(1) + std::abs(x);
    return g / (d * d);
  }
};

// sign (-1, 0 or 1) feeds L1 weight decay; like Paddle's it is registered
// without a gradient (its derivative is 0 almost everywhere).
struct Sign {
  static constexpr const char* kName = "sign";
  template <typename T> static T Fwd(T x) { return T((x > T(0)) - (x < T(0))); }
};

template <typename F>
void ActivationKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  out->Resize(x.dims());
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    const T* xp = x.data<T>();
    T* op = out->mutable_data<T>();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) op[i] = F::template Fwd<T>(xp[i]);
  });
}

template <typename F>
void ActivationGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradVarName("X"))) return;
  const Tensor& v = ctx.Input(F::kGradUsesOut ? "Out" : "X");
  const Tensor& g = ctx.Input(GradVarName("Out"));
  FLOTILLA_ENFORCE(g.numel() == v.numel(), ctx.Where(), ": Out@GRAD has shape ",
                   DimsToString(g.dims()), " but the forward value has ", DimsToString(v.dims()));
  Tensor* dx = ctx.Output(GradVarName("X"));
  dx->Resize(v.dims());
  VisitFloatDType(v.dtype(), ctx.Where(), [&]<typename T>() {
    const T* vp = v.data<T>();
    const T* gp = g.data<T>();
    T* dp = dx->mutable_data<T>();
    const int64_t n = v.numel();
    for (int64_t i = 0; i < n; ++i) dp[i] = F::template Grad<T>(vp[i], gp[i]);
  });
}

// An activation's gradient reads Out (kGradUsesOut) or X, and dOut.
template <typename F>
GradSlots ActivationGradSlots() {
  const std::string read = F::kGradUsesOut ? "Out" : "X";
  GradSlots slots{.output_grads = {"Out"},
                  .input_grads = {"X"},
                  .infer_shape = [read](InferShapeContext& ctx) { ctx.ShareDim(read, GradVarName("X")); }};
  (F::kGradUsesOut ? slots.forward_outputs : slots.forward_inputs) = {read};
  return slots;
}

template <typename F>
void RegisterActivation(OpRegistry& r) {
  r.RegisterWithGrad({.type = F::kName,
                      .infer_shape = [](InferShapeContext& ctx) { ctx.ShareDim("X", "Out"); },
                      .kernels = {{Place::Kind::kCPU, ActivationKernel<F>}},
                      .share_lod = {{"X", "Out"}}},
                     ActivationGradSlots<F>(), ActivationGradKernel<F>);
}

// ---- relu6 and hard_swish: activations with attributes ----
// Fwd(x, a) and Grad(v, g, a) take the attributes read by Attrs(ctx).

struct Relu6 {
  static constexpr const char* kName = "relu6";
  static constexpr bool kGradUsesOut = true;
  struct Attrs {
    double threshold;
  };
  static Attrs Read(const ExecutionContext& ctx) { return {ctx.Attr<float>("threshold")}; }
  static AttributeMap Defaults() { return {{"threshold", 6.0f}}; }
  template <typename T> static T Fwd(T x, const Attrs& a) { return std::min(std::max(x, T(0)), T(a.threshold)); }
  template <typename T> static T Grad(T out, T g, const Attrs& a) {
    return out > T(0) && out < T(a.threshold) ? g : T(0);
  }
};

// x * min(max(x + offset, 0), threshold) / scale (MobileNetV3's).
struct HardSwish {
  static constexpr const char* kName = "hard_swish";
  static constexpr bool kGradUsesOut = false;
  struct Attrs {
    double threshold, scale, offset;
  };
  static Attrs Read(const ExecutionContext& ctx) {
    return {ctx.Attr<float>("threshold"), ctx.Attr<float>("scale"), ctx.Attr<float>("offset")};
  }
  static AttributeMap Defaults() { return {{"threshold", 6.0f}, {"scale", 6.0f}, {"offset", 3.0f}}; }
  template <typename T> static T Fwd(T x, const Attrs& a) {
    return x * std::min(std::max(x + T(a.offset), T(0)), T(a.threshold)) / T(a.scale);
  }
  template <typename T> static T Grad(T x, T g, const Attrs& a) {
    const T s = x + T(a.offset);
    if (s <= T(0)) return T(0);
    if (s >= T(a.threshold)) return g * T(a.threshold / a.scale);
    return g * (T(2) * x + T(a.offset)) / T(a.scale);
  }
};

template <typename F>
void ParamActivationKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const typename F::Attrs a = F::Read(ctx);
  Tensor* out = ctx.Output("Out");
  out->Resize(x.dims());
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    const T* xp = x.data<T>();
    T* op = out->mutable_data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) op[i] = F::template Fwd<T>(xp[i], a);
  });
}

template <typename F>
void ParamActivationGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradVarName("X"))) return;
  const Tensor& v = ctx.Input(F::kGradUsesOut ? "Out" : "X");
  const Tensor& g = ctx.Input(GradVarName("Out"));
  FLOTILLA_ENFORCE(g.numel() == v.numel(), ctx.Where(), ": Out@GRAD has shape ",
                   DimsToString(g.dims()), " but the forward value has ", DimsToString(v.dims()));
  const typename F::Attrs a = F::Read(ctx);
  Tensor* dx = ctx.Output(GradVarName("X"));
  dx->Resize(v.dims());
  VisitFloatDType(v.dtype(), ctx.Where(), [&]<typename T>() {
    const T* vp = v.data<T>();
    const T* gp = g.data<T>();
    T* dp = dx->mutable_data<T>();
    for (int64_t i = 0; i < v.numel(); ++i) dp[i] = F::template Grad<T>(vp[i], gp[i], a);
  });
}

template <typename F>
void RegisterParamActivation(OpRegistry& r) {
  r.RegisterWithGrad({.type = F::kName,
                      .infer_shape = [](InferShapeContext& ctx) { ctx.ShareDim("X", "Out"); },
                      .kernels = {{Place::Kind::kCPU, ParamActivationKernel<F>}},
                      .default_attrs = F::Defaults(),
                      .share_lod = {{"X", "Out"}}},
                     ActivationGradSlots<F>(), ParamActivationGradKernel<F>);
}

// ---- scale: Out = scale * X + bias (or scale * (X + bias)) ----

void ScaleKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  out->Resize(x.dims());
  const double scale = ctx.Attr<float>("scale");
  double bias = ctx.Attr<float>("bias");
  if (!ctx.Attr<bool>("bias_after_scale")) bias *= scale;
  VisitDType(x.dtype(), [&]<typename T>() {
    const T s = static_cast<T>(scale), b = static_cast<T>(bias);
    const T* xp = x.data<T>();
    T* op = out->mutable_data<T>();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) op[i] = s * xp[i] + b;
  });
}

// dX = scale * dOut: itself a scale op (as in Paddle), so no scale_grad.
std::vector<OpDesc> ScaleGrad(const OpDesc& fwd) {
  return {OpDesc("scale")
              .In("X", {GradVarName(fwd.Output("Out"))})
              .Out("Out", {GradVarName(fwd.Input("X"))})
              .Set("scale", fwd.AttrOr<float>("scale", 1.0f))
              .Set("bias", 0.0f)
              .Set("bias_after_scale", true)};
}

}  // namespace

void RegisterActivationOps() {
  auto& r = OpRegistry::Global();
  RegisterActivation<Relu>(r);
  RegisterActivation<Tanh>(r);
  RegisterActivation<Sigmoid>(r);
  RegisterActivation<Square>(r);
  RegisterActivation<Softsign>(r);
  RegisterParamActivation<Relu6>(r);
  RegisterParamActivation<HardSwish>(r);
  r.Register({.type = Sign::kName,
              .infer_shape = [](InferShapeContext& ctx) { ctx.ShareDim("X", "Out"); },
              .kernels = {{Place::Kind::kCPU, ActivationKernel<Sign>}},
              .share_lod = {{"X", "Out"}}});
  r.Register({.type = "scale",
              .infer_shape = [](InferShapeContext& ctx) { ctx.ShareDim("X", "Out"); },
              .kernels = {{Place::Kind::kCPU, ScaleKernel}},
              .grad_maker = ScaleGrad,
              .default_attrs = {{"scale", 1.0f}, {"bias", 0.0f}, {"bias_after_scale", true}},
              .share_lod = {{"X", "Out"}}});
}

}  // namespace flotilla::ops
