// mean, reduce_sum and reduce_mean.
//
// A reduction is planned once per call: axes of size 1 are dropped and runs
// of neighbouring axes that are all reduced (or all kept) are merged. One
// reduced run — the common case (dim 0, dim -1, all) — is a [outer, r, inner]
// loop over contiguous rows; several runs use a general walk that maps each
// input element to its output element.
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"

namespace flotilla::ops {
namespace {

// ---- planning ----

// reduced[i] is true when axis i of X is reduced: every axis for
// reduce_all or an empty dim list (as in Paddle 2), else those in dim
// (negative ones count from the end). Errors name attribute dim.
template <typename Ctx>
std::vector<bool> ReducedAxes(const Ctx& ctx, int rank) {
  const auto dims = ctx.template Attr<std::vector<int32_t>>("dim");
  std::vector<bool> reduced(rank, ctx.template Attr<bool>("reduce_all") || dims.empty());
  if (reduced.empty() || reduced[0]) return reduced;
  for (int32_t d : dims) {
    int axis = d < 0 ? d + rank : d;
    FLOTILLA_ENFORCE(axis >= 0 && axis < rank, ctx.Where(), ": attribute dim (", d,
                     ") is out of range for X of rank ", rank);
    reduced[axis] = true;
  }
  return reduced;
}

// Paddle's output shape: reduced axes dropped (or kept as 1); [1] when
// nothing is left.
Dims ReducedDims(const Dims& x, const std::vector<bool>& reduced, bool keep_dim) {
  Dims out;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(x[i]);
    } else if (keep_dim) {
      out.push_back(1);
    }
  }
  if (out.empty()) out.push_back(1);
  return out;
}

struct Run {
  int64_t size;
  bool reduced;
};

struct ReducePlan {
  std::vector<Run> runs;   // merged axes, none of size 1
  int64_t count = 1;       // elements folded into each output element
  int reduced_runs = 0;
};

ReducePlan PlanReduce(const Dims& x, const std::vector<bool>& reduced) {
  ReducePlan plan;
  for (size_t i = 0; i < x.size(); ++i) {
    if (reduced[i]) plan.count *= x[i];
    if (x[i] == 1) continue;
    if (!plan.runs.empty() && plan.runs.back().reduced == reduced[i]) {
      plan.runs.back().size *= x[i];
    } else {
      plan.runs.push_back({x[i], reduced[i]});
      plan.reduced_runs += reduced[i] ? 1 : 0;
    }
  }
  return plan;
}

// [outer, r, inner] of a plan with at most one reduced run.
struct ThreeD {
  int64_t outer = 1, r = 1, inner = 1;
};

ThreeD AsThreeD(const ReducePlan& plan) {
  ThreeD t;
  bool seen = false;
  for (const Run& run : plan.runs) {
    if (run.reduced) {
      t.r = run.size;
      seen = true;
    } else {
      (seen ? t.inner : t.outer) *= run.size;
    }
  }
  return t;
}

// Calls fn(in_index, out_index) for every input element, in input order.
template <typename Fn>
void ForEachMapped(const ReducePlan& plan, Fn&& fn) {
  const size_t d = plan.runs.size();
  std::vector<int64_t> out_stride(d, 0), idx(d, 0);
  int64_t stride = 1, total = 1;
  for (size_t i = d; i-- > 0;) {
    total *= plan.runs[i].size;
    if (plan.runs[i].reduced) continue;
    out_stride[i] = stride;
    stride *= plan.runs[i].size;
  }
  int64_t o = 0;
  for (int64_t in = 0; in < total; ++in) {
    fn(in, o);
    for (size_t a = d; a-- > 0;) {  // odometer step
      o += out_stride[a];
      if (++idx[a] < plan.runs[a].size) break;
      o -= out_stride[a] * idx[a];
      idx[a] = 0;
    }
  }
}

// ---- kernels ----

// out = scale * Σ over reduced axes of x.
template <typename T>
void ReduceSum(const ReducePlan& plan, const T* x, int64_t out_numel, T scale, T* out) {
  std::memset(out, 0, sizeof(T) * out_numel);
  if (plan.reduced_runs <= 1) {
    ThreeD t = AsThreeD(plan);
    for (int64_t o = 0; o < t.outer; ++o) {
      T* dst = out + o * t.inner;
      for (int64_t r = 0; r < t.r; ++r) {
        const T* src = x + (o * t.r + r) * t.inner;
        for (int64_t i = 0; i < t.inner; ++i) dst[i] += src[i];
      }
    }
  } else {
    ForEachMapped(plan, [&](int64_t in, int64_t o) { out[o] += x[in]; });
  }
  if (scale != T(1)) {
    for (int64_t i = 0; i < out_numel; ++i) out[i] *= scale;
  }
}

// dx = scale * g broadcast back over the reduced axes.
template <typename T>
void ReduceSumGrad(const ReducePlan& plan, const T* g, T scale, T* dx) {
  if (plan.reduced_runs > 1) {
    ForEachMapped(plan, [&](int64_t in, int64_t o) { dx[in] = scale * g[o]; });
    return;
  }
  ThreeD t = AsThreeD(plan);
  for (int64_t o = 0; o < t.outer; ++o) {
    const T* src = g + o * t.inner;
    for (int64_t r = 0; r < t.r; ++r) {
      T* dst = dx + (o * t.r + r) * t.inner;
      for (int64_t i = 0; i < t.inner; ++i) dst[i] = scale * src[i];
    }
  }
}

// The three ops differ in which axes they reduce and whether they average.
struct MeanAll {  // mean: every axis, Out is [1]
  static constexpr bool kAverage = true, kAllAxes = true;
};
struct SumAxes {  // reduce_sum
  static constexpr bool kAverage = false, kAllAxes = false;
};
struct MeanAxes {  // reduce_mean
  static constexpr bool kAverage = true, kAllAxes = false;
};

template <typename K, typename Ctx>
std::vector<bool> AxesOf(const Ctx& ctx, int rank) {
  if constexpr (K::kAllAxes) {
    return std::vector<bool>(rank, true);
  } else {
    return ReducedAxes(ctx, rank);
  }
}

template <typename K, typename T>
T ScaleOf(const ReducePlan& plan) {
  return K::kAverage ? static_cast<T>(1.0 / static_cast<double>(plan.count)) : T(1);
}

template <typename K>
void ReduceKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  std::vector<bool> reduced = AxesOf<K>(ctx, x.rank());
  ReducePlan plan = PlanReduce(x.dims(), reduced);
  Tensor* out = ctx.Output("Out");
  out->Resize(ReducedDims(x.dims(), reduced, !K::kAllAxes && ctx.Attr<bool>("keep_dim")));
  VisitDType(x.dtype(), [&]<typename T>() {
    if constexpr (std::is_integral_v<T>) {
      FLOTILLA_ENFORCE(!K::kAverage, ctx.Where(), ": averaging ", DTypeName(x.dtype()),
                       " X is not supported; cast it to a float type first");
    }
    ReduceSum<T>(plan, x.data<T>(), out->numel(), ScaleOf<K, T>(plan), out->mutable_data<T>());
  });
}

template <typename K>
void ReduceGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradVarName("X"))) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& g = ctx.Input(GradVarName("Out"));
  ReducePlan plan = PlanReduce(x.dims(), AxesOf<K>(ctx, x.rank()));
  FLOTILLA_ENFORCE(g.numel() * plan.count == x.numel(), ctx.Where(), ": Out@GRAD has shape ",
                   DimsToString(g.dims()), " but X ", DimsToString(x.dims()),
                   " reduces to a different size");
  Tensor* dx = ctx.Output(GradVarName("X"));
  dx->Resize(x.dims());
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    ReduceSumGrad<T>(plan, g.data<T>(), ScaleOf<K, T>(plan), dx->mutable_data<T>());
  });
}

void ReduceInferShape(InferShapeContext& ctx) {
  Dims x = ctx.InputDim("X");
  std::vector<bool> reduced = ReducedAxes(ctx, static_cast<int>(x.size()));
  ctx.SetOutputDim("Out", ReducedDims(x, reduced, ctx.Attr<bool>("keep_dim")));
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
}

void MeanInferShape(InferShapeContext& ctx) {
  ctx.SetOutputDim("Out", {1});
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
}

template <typename K>
void RegisterReduce(OpRegistry& r, const std::string& type, InferShapeFn infer_shape,
                    AttributeMap default_attrs) {
  r.RegisterWithGrad({.type = type,
                      .infer_shape = std::move(infer_shape),
                      .kernels = {{Place::Kind::kCPU, ReduceKernel<K>}},
                      .default_attrs = std::move(default_attrs)},
                     {.forward_inputs = {"X"}, .output_grads = {"Out"}, .input_grads = {"X"}},
                     ReduceGradKernel<K>);
}

}  // namespace

void RegisterReduceOps() {
  auto& r = OpRegistry::Global();
  const AttributeMap reduce_attrs = {{"dim", std::vector<int32_t>{0}},
                                     {"keep_dim", false},
                                     {"reduce_all", false}};
  RegisterReduce<MeanAll>(r, "mean", MeanInferShape, {});
  RegisterReduce<SumAxes>(r, "reduce_sum", ReduceInferShape, reduce_attrs);
  RegisterReduce<MeanAxes>(r, "reduce_mean", ReduceInferShape, reduce_attrs);
}

}  // namespace flotilla::ops
