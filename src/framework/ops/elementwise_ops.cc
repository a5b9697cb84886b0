// elementwise_add/sub/mul/div/max/min and the comparisons less_than,
// less_equal, greater_than, greater_equal, equal, not_equal with Paddle's
// broadcasting: Y matches a contiguous run of X's dims starting at attribute
// `axis` (-1: the trailing dims), so X is viewed as [pre, n, post] and Y as
// [n]. With axis -1, shapes outside that rule broadcast as NumPy's do (Paddle
// 2.x): X and Y both stretch their size-1 dims, e.g. [N, 1] - [N] -> [N, N].
// The comparisons give 1/0 as int64 (Flotilla has no bool dtype) and have
// no gradient, as in Paddle.
//
// Each op is a functor struct with static inline member functions; the loops
// below are templates over it, so every element is a plain inlined expression
// on raw pointers that the compiler vectorises. Three loop shapes cover the
// cases: same shape (pre = post = 1), a scalar Y (n = 1), a bias row
// (post = 1) and the general [pre, n, post].
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

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

// max and min pass the gradient to the chosen side; ties go to Y, as in
// Paddle (dX = g * (x > y), dY = g * (x <= y) for max).
struct MaxOp {
  static constexpr const char* kName = "elementwise_max";
  template <typename T> static T Fwd(T x, T y) { return x > y ? x : y; }
  template <typename T> static T DX(T x, T y, T g) { return x > y ? g : T(0); }
  template <typename T> static T DY(T x, T y, T g) { return x > y ? T(0) : g; }
};

struct MinOp {
  static constexpr const char* kName = "elementwise_min";
  template <typename T> static T Fwd(T x, T y) { return x < y ? x : y; }
  template <typename T> static T DX(T x, T y, T g) { return x < y ? g : T(0); }
  template <typename T> static T DY(T x, T y, T g) { return x < y ? T(0) : g; }
};

// ---- the comparisons: Out (int64) = x OP y ----

struct LessThan {
  static constexpr const char* kName = "less_than";
  template <typename T> static bool Cmp(T x, T y) { return x < y; }
};
struct LessEqual {
  static constexpr const char* kName = "less_equal";
  template <typename T> static bool Cmp(T x, T y) { return x <= y; }
};
struct GreaterThan {
  static constexpr const char* kName = "greater_than";
  template <typename T> static bool Cmp(T x, T y) { return x > y; }
};
struct GreaterEqual {
  static constexpr const char* kName = "greater_equal";
  template <typename T> static bool Cmp(T x, T y) { return x >= y; }
};
struct Equal {
  static constexpr const char* kName = "equal";
  template <typename T> static bool Cmp(T x, T y) { return x == y; }
};
struct NotEqual {
  static constexpr const char* kName = "not_equal";
  template <typename T> static bool Cmp(T x, T y) { return x != y; }
};

// ---- NumPy broadcasting (axis -1, shapes outside Paddle's axis rule) ----

// The broadcast shape of X and Y aligned at their last dims; -1 (unknown)
// stays unknown unless the other side fixes it. nullopt when two known
// sizes differ and neither is 1.
std::optional<Dims> NumpyDims(const Dims& x, const Dims& y) {
  const size_t rank = std::max(x.size(), y.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t a = i < rank - x.size() ? 1 : x[i - (rank - x.size())];
    const int64_t b = i < rank - y.size() ? 1 : y[i - (rank - y.size())];
    if (a == b || b == 1) {
      out[i] = a;
    } else if (a == 1) {
      out[i] = b;
    } else if (a < 0 || b < 0) {
      out[i] = -1;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

bool AxisRuleHolds(const Dims& x, const Dims& y, int axis) {
  try {
    math::ComputeBroadcast(x, y, axis);
    return true;
  } catch (const InvalidArgument&) {
    return false;
  }
}

// Out's dims and, per Out dim, the step it takes in X and in Y (0 where
// that side is stretched).
struct NumpyBroadcast {
  Dims out;
  std::vector<int64_t> x_step, y_step;
};

std::vector<int64_t> Steps(const Dims& dims, const Dims& out) {
  std::vector<int64_t> steps(out.size(), 0);
  int64_t stride = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    const size_t d = dims.size() - 1 - i, o = out.size() - 1 - i;
    steps[o] = dims[d] == 1 ? 0 : stride;
    stride *= dims[d];
  }
  return steps;
}

// Run-time choice: Paddle's axis rule when it holds (Out has X's dims),
// else NumPy's when axis is -1, else the axis rule's error.
template <typename Ctx>
std::optional<NumpyBroadcast> NumpyBroadcastOf(const Ctx& ctx, const Dims& x, const Dims& y) {
  const int axis = ctx.template Attr<int32_t>("axis");
  if (axis != -1 || AxisRuleHolds(x, y, axis)) return std::nullopt;
  std::optional<Dims> out = NumpyDims(x, y);
  if (!out) return std::nullopt;
  return NumpyBroadcast{*out, Steps(x, *out), Steps(y, *out)};
}

// Calls fn(o, xi, yi) for every element o of Out with its X and Y offsets.
template <typename Fn>
void ForEachBroadcast(const NumpyBroadcast& b, Fn&& fn) {
  const int rank = static_cast<int>(b.out.size());
  const int64_t total = Numel(b.out);
  std::vector<int64_t> index(rank, 0);
  int64_t xi = 0, yi = 0;
  for (int64_t o = 0; o < total; ++o) {
    fn(o, xi, yi);
    for (int d = rank - 1; d >= 0; --d) {
      xi += b.x_step[d];
      yi += b.y_step[d];
      if (++index[d] < b.out[d]) break;
      xi -= b.x_step[d] * b.out[d];
      yi -= b.y_step[d] * b.out[d];
      index[d] = 0;
    }
  }
}

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
  if (ctx.Attr<int32_t>("axis") == -1) {  // NumPy's broadcasting where it gives another shape than X's
    std::optional<Dims> out = NumpyDims(x, y);
    if (out && *out != x && !(!HasUnknownDim(x) && !HasUnknownDim(y) && AxisRuleHolds(x, y, -1))) {
      ctx.SetOutputDim("Out", *out);
      return;
    }
  }
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
  Tensor* out = ctx.Output("Out");
  if (std::optional<NumpyBroadcast> nb = NumpyBroadcastOf(ctx, x.dims(), y.dims())) {
    out->Resize(nb->out);
    VisitDType(x.dtype(), [&]<typename T>() {
      if constexpr (std::is_same_v<F, DivOp>) CheckNoZeroDivisor<T>(ctx, y);
      const T* xp = x.data<T>();
      const T* yp = y.data<T>();
      T* op = out->mutable_data<T>();
      ForEachBroadcast(*nb, [&](int64_t o, int64_t xi, int64_t yi) { op[o] = F::Fwd(xp[xi], yp[yi]); });
    });
    return;
  }
  math::BroadcastShape b = Broadcast(ctx, x.dims(), y.dims());
  out->Resize(x.dims());
  VisitDType(x.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<F, DivOp>) CheckNoZeroDivisor<T>(ctx, y);
    ForwardLoop<F, T>(b, x.data<T>(), y.data<T>(), out->mutable_data<T>());
  });
}

// Comparisons: the same broadcasting, 1/0 into an int64 Out.
template <typename F>
void CompareKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  FLOTILLA_ENFORCE(x.dtype() == y.dtype(), ctx.Where(), ": X is ", DTypeName(x.dtype()),
                   " but Y is ", DTypeName(y.dtype()));
  Tensor* out = ctx.Output("Out");
  std::optional<NumpyBroadcast> nb = NumpyBroadcastOf(ctx, x.dims(), y.dims());
  const bool axis_rule = !nb.has_value();
  if (axis_rule) {  // Paddle's axis rule, as NumPy's over Y padded with 1s around its run
    math::BroadcastShape b = Broadcast(ctx, x.dims(), y.dims());
    nb = NumpyBroadcast{Dims{b.pre, b.n, b.post}, {b.n * b.post, b.post, 1}, {0, 1, 0}};
    if (b.n == 1) nb->y_step[1] = 0;
  }
  VisitDType(x.dtype(), [&]<typename T>() {
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    out->Resize(nb->out);
    int64_t* op = out->mutable_data<int64_t>();
    ForEachBroadcast(*nb, [&](int64_t o, int64_t xi, int64_t yi) { op[o] = F::Cmp(xp[xi], yp[yi]) ? 1 : 0; });
  });
  if (axis_rule) out->Resize(x.dims());
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
  if (std::optional<NumpyBroadcast> nb = NumpyBroadcastOf(ctx, x.dims(), y.dims())) {
    FLOTILLA_ENFORCE(g.numel() == Numel(nb->out), ctx.Where(), ": Out@GRAD has shape ",
                     DimsToString(g.dims()), " but X and Y broadcast to ", DimsToString(nb->out));
    VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
      T* dx = GradOutput<T>(ctx, GradVarName("X"), x.dims());
      T* dy = GradOutput<T>(ctx, GradVarName("Y"), y.dims());
      if (dx != nullptr) std::fill(dx, dx + x.numel(), T(0));
      if (dy != nullptr) std::fill(dy, dy + y.numel(), T(0));
      const T* xp = x.data<T>();
      const T* yp = y.data<T>();
      const T* gp = g.data<T>();
      ForEachBroadcast(*nb, [&](int64_t o, int64_t xi, int64_t yi) {
        if (dx != nullptr) dx[xi] += F::DX(xp[xi], yp[yi], gp[o]);
        if (dy != nullptr) dy[yi] += F::DY(xp[xi], yp[yi], gp[o]);
      });
    });
    return;
  }
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

template <typename F>
void RegisterCompare(OpRegistry& r) {
  r.Register({.type = F::kName,
              .infer_shape =
                  [](InferShapeContext& ctx) {
                    ElementwiseInferShape(ctx);
                    ctx.SetOutputDType("Out", DType::kInt64);
                  },
              .kernels = {{Place::Kind::kCPU, CompareKernel<F>}},
              .default_attrs = {{"axis", int32_t{-1}}}});
}

}  // namespace

void RegisterElementwiseOps() {
  auto& r = OpRegistry::Global();
  RegisterElementwise<AddOp>(r);
  RegisterElementwise<SubOp>(r);
  RegisterElementwise<MulOp>(r);
  RegisterElementwise<DivOp>(r);
  RegisterElementwise<MaxOp>(r);
  RegisterElementwise<MinOp>(r);
  RegisterCompare<LessThan>(r);
  RegisterCompare<LessEqual>(r);
  RegisterCompare<GreaterThan>(r);
  RegisterCompare<GreaterEqual>(r);
  RegisterCompare<Equal>(r);
  RegisterCompare<NotEqual>(r);
}

}  // namespace flotilla::ops
