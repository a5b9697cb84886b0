// elementwise_add/sub/mul/div with Paddle's broadcasting: Y matches a
// contiguous run of X's dims starting at attribute `axis` (-1: the trailing
// dims), so X is viewed as [pre, n, post] and Y as [n].
//
// Each op is a functor struct with static inline member functions; the loops
// below are templates over it, so every element is a plain inlined expression
// on raw pointers that the compiler vectorises. Three loop shapes cover the
// cases: same shape (pre = post = 1), a scalar Y (n = 1), a bias row
// (post = 1) and the general [pre, n, post].
#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "flotilla/core/math.h"
#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "framework/ops/shape_checks.h"

namespace flotilla::ops {
namespace {

// ---- the four operations: forward value and partial derivatives ----

struct AddOp {
  static constexpr const char* kName = "elementwise_add";
  template <typename T> static T Fwd(T x, T y) { return x + y; }
  template <typename T> static T DX(T x, T y, T g) { return g; }
  template <typename T> static T DY(T x, T y, T g) { return g; }
};

struct SubOp {
  static constexpr const char* kName = "elementwise_sub";
  template <typename T> static T Fwd(T x, T y) { return x - y; }
  template <typename T> static T DX(T x, T y, T g) { return g; }
  template <typename T> static T DY(T x, T y, T g) { return -g; }
};

struct MulOp {
  static constexpr const char* kName = "elementwise_mul";
  template <typename T> static T Fwd(T x, T y) { return x * y; }
  template <typename T> static T DX(T x, T y, T g) { return g * y; }
  template <typename T> static T DY(T x, T y, T g) { return g * x; }
};

struct DivOp {
  static constexpr const char* kName = "elementwise_div";
  template <typename T> static T Fwd(T x, T y) { return x / y; }
  template <typename T> static T DX(T x, T y, T g) { return g / y; }
  template <typename T> static T DY(T x, T y, T g) { return -g * x / (y * y); }
};

// ---- broadcasting ----

// Y's view against X, with errors naming the op and both variables; they
// show X as `shown_x` (the compile-time dims, when X was filled in).
template <typename Ctx>
math::BroadcastShape Broadcast(const Ctx& ctx, const Dims& x, const Dims& y,
                               const Dims& shown_x) {
  int axis = ctx.template Attr<int32_t>("axis");
  FLOTILLA_ENFORCE(axis >= -1 && axis < static_cast<int>(std::max<size_t>(x.size(), 1)),
                   ctx.Where(), ": attribute axis (", axis, ") must be -1 or in [0, ", x.size(),
                   ") for ", DescribeInput(ctx, "X", shown_x));
  try {
    return math::ComputeBroadcast(x, y, axis);
  } catch (const InvalidArgument& e) {
    FLOTILLA_THROW(InvalidArgument, ctx.Where(), ": ", DescribeInput(ctx, "Y", y),
                   " cannot broadcast to ", DescribeInput(ctx, "X", shown_x), " at axis ", axis,
                   " (Y's dims must equal a run of X's dims): ", e.what());
  }
}

template <typename Ctx>
math::BroadcastShape Broadcast(const Ctx& ctx, const Dims& x, const Dims& y) {
  return Broadcast(ctx, x, y, x);
}

// X's compile-time dims with each unknown (-1) dim replaced by a size that
// cannot fail the check: Y's size where Y aligns to it, 1 elsewhere. So
// X [-1, 1280] + Y [1000] fails when the program is built, not at run time.
Dims AssumeUnknownDimsMatch(Dims x, const Dims& y, int axis) {
  const int start = axis < 0 ? static_cast<int>(x.size()) - static_cast<int>(y.size()) : axis;
  for (int i = 0; i < static_cast<int>(x.size()); ++i) {
    if (x[i] >= 0) continue;
    const int j = i - start;
    x[i] = (j >= 0 && j < static_cast<int>(y.size())) ? y[j] : 1;
  }
  return x;
}

void ElementwiseInferShape(InferShapeContext& ctx) {
  Dims x = ctx.InputDim("X"), y = ctx.InputDim("Y");
  if (!HasUnknownDim(y)) {
    Broadcast(ctx, AssumeUnknownDimsMatch(x, y, ctx.Attr<int32_t>("axis")), y, x);
  }
  ctx.ShareDim("X", "Out");
}

// ---- forward loops ----

template <typename F, typename T>
void ForwardLoop(const math::BroadcastShape& b, const T* x, const T* y, T* out) {
  const int64_t n = b.n, post = b.post;
  if (n == 1) {  // scalar Y
    const T yv = y[0];
    for (int64_t i = 0; i < b.pre * post; ++i) out[i] = F::Fwd(x[i], yv);
  } else if (post == 1) {  // same shape (pre == 1) or bias row
    for (int64_t p = 0; p < b.pre; ++p) {
      const T* xp = x + p * n;
      T* op = out + p * n;
      for (int64_t j = 0; j < n; ++j) op[j] = F::Fwd(xp[j], y[j]);
    }
  } else {
    for (int64_t p = 0; p < b.pre; ++p) {
      for (int64_t j = 0; j < n; ++j) {
        const int64_t base = (p * n + j) * post;
        const T yv = y[j];
        for (int64_t k = 0; k < post; ++k) out[base + k] = F::Fwd(x[base + k], yv);
      }
    }
  }
}

template <typename T>
void CheckNoZeroDivisor(const ExecutionContext& ctx, const Tensor& y) {
  if constexpr (std::is_integral_v<T>) {
    const T* p = y.data<T>();
    for (int64_t i = 0; i < y.numel(); ++i) {
      FLOTILLA_ENFORCE(p[i] != 0, ctx.Where(), ": integer division by zero (Y[", i, "] is 0)");
    }
  }
}

template <typename F>
void ForwardKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  FLOTILLA_ENFORCE(x.dtype() == y.dtype(), ctx.Where(), ": X is ", DTypeName(x.dtype()),
                   " but Y is ", DTypeName(y.dtype()));
  math::BroadcastShape b = Broadcast(ctx, x.dims(), y.dims());
  Tensor* out = ctx.Output("Out");
  out->Resize(x.dims());
  VisitDType(x.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<F, DivOp>) CheckNoZeroDivisor<T>(ctx, y);
    ForwardLoop<F, T>(b, x.data<T>(), y.data<T>(), out->mutable_data<T>());
  });
}

// ---- gradient loops ----
// dX has X's shape: dX[p,j,k] = F::DX(x, y[j], g). dY sums F::DY over the
// broadcast dims pre and post. Either output may be null (not needed).

template <typename F, typename T>
void GradLoopScalarY(const math::BroadcastShape& b, const T* x, const T* y, const T* g, T* dx,
                     T* dy) {
  const int64_t total = b.pre * b.post;
  const T yv = y[0];
  if (dx != nullptr) {
    for (int64_t i = 0; i < total; ++i) dx[i] = F::DX(x[i], yv, g[i]);
  }
  if (dy != nullptr) {
    T acc = 0;
    for (int64_t i = 0; i < total; ++i) acc += F::DY(x[i], yv, g[i]);
    dy[0] = acc;
  }
}

template <typename F, typename T>
void GradLoopRows(const math::BroadcastShape& b, const T* x, const T* y, const T* g, T* dx,
                  T* dy) {
  const int64_t n = b.n;
  if (dy != nullptr) std::memset(dy, 0, sizeof(T) * n);
  for (int64_t p = 0; p < b.pre; ++p) {
    const T* xp = x + p * n;
    const T* gp = g + p * n;
    if (dx != nullptr) {
      T* dxp = dx + p * n;
      for (int64_t j = 0; j < n; ++j) dxp[j] = F::DX(xp[j], y[j], gp[j]);
    }
    if (dy != nullptr) {
      for (int64_t j = 0; j < n; ++j) dy[j] += F::DY(xp[j], y[j], gp[j]);
    }
  }
}

template <typename F, typename T>
void GradLoopGeneral(const math::BroadcastShape& b, const T* x, const T* y, const T* g, T* dx,
                     T* dy) {
  const int64_t n = b.n, post = b.post;
  if (dy != nullptr) std::memset(dy, 0, sizeof(T) * n);
  for (int64_t p = 0; p < b.pre; ++p) {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t base = (p * n + j) * post;
      const T yv = y[j];
      if (dx != nullptr) {
        for (int64_t k = 0; k < post; ++k) dx[base + k] = F::DX(x[base + k], yv, g[base + k]);
      }
      if (dy != nullptr) {
        T acc = 0;
        for (int64_t k = 0; k < post; ++k) acc += F::DY(x[base + k], yv, g[base + k]);
        dy[j] += acc;
      }
    }
  }
}

template <typename F, typename T>
void GradLoop(const math::BroadcastShape& b, const T* x, const T* y, const T* g, T* dx, T* dy) {
  if (b.n == 1) return GradLoopScalarY<F, T>(b, x, y, g, dx, dy);
  if (b.post == 1) return GradLoopRows<F, T>(b, x, y, g, dx, dy);
  GradLoopGeneral<F, T>(b, x, y, g, dx, dy);
}

template <typename T>
T* GradOutput(ExecutionContext& ctx, const std::string& slot, const Dims& dims) {
  if (!ctx.HasOutput(slot)) return nullptr;
  Tensor* t = ctx.Output(slot);
  t->Resize(dims);
  return t->mutable_data<T>();
}

template <typename F>
void GradKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  const Tensor& g = ctx.Input(GradVarName("Out"));
  math::BroadcastShape b = Broadcast(ctx, x.dims(), y.dims());
  FLOTILLA_ENFORCE(g.numel() == x.numel(), ctx.Where(), ": Out@GRAD has shape ",
                   DimsToString(g.dims()), " but X has ", DimsToString(x.dims()));
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    T* dx = GradOutput<T>(ctx, GradVarName("X"), x.dims());
    T* dy = GradOutput<T>(ctx, GradVarName("Y"), y.dims());
    GradLoop<F, T>(b, x.data<T>(), y.data<T>(), g.data<T>(), dx, dy);
  });
}

template <typename F>
void RegisterElementwise(OpRegistry& r) {
  r.RegisterWithGrad({.type = F::kName,
                      .infer_shape = ElementwiseInferShape,
                      .kernels = {{Place::Kind::kCPU, ForwardKernel<F>}},
                      .default_attrs = {{"axis", int32_t{-1}}},
                      .share_lod = {{"X", "Out"}}},
                     {.forward_inputs = {"X", "Y"}, .output_grads = {"Out"}, .input_grads = {"X", "Y"}},
                     GradKernel<F>);
}

}  // namespace

void RegisterElementwiseOps() {
  auto& r = OpRegistry::Global();
  RegisterElementwise<AddOp>(r);
  RegisterElementwise<SubOp>(r);
  RegisterElementwise<MulOp>(r);
  RegisterElementwise<DivOp>(r);
}

}  // namespace flotilla::ops
