// batch_norm: see batch_norm.h. Statistics are accumulated in double, one
// pass for sum and sum of squares (so a distributed batch needs a single
// all-reduce of 2C + 1 numbers); each channel's [H, W] planes are
// contiguous, so the loops run over whole planes.
#include "flotilla/framework/ops/batch_norm.h"

#include <cmath>
#include <string>
#include <vector>

#include "framework/ops/ops.h"
#include "framework/ops/shape_checks.h"
#include "framework/ops/input_checks.h"
#include "framework/ops/spatial_util.h"

namespace flotilla::ops {
namespace {

// X viewed as [n, c, hw].
struct BnShape {
  int64_t n = 0, c = 0, hw = 1;
  int64_t count() const { return n * hw; }  // elements per channel
};

template <typename Ctx>
BnShape MakeBnShape(const Ctx& ctx, const Dims& x) {
  FLOTILLA_ENFORCE(x.size() >= 2 && x.size() <= 5, ctx.Where(), ": ", DescribeInput(ctx, "X", x),
                   " must have rank 2 to 5, expected shape [N, C, ...]");
  const std::string layout = ctx.op().template AttrOr<std::string>("data_layout", "NCHW");
  FLOTILLA_ENFORCE(layout == "NCHW" || layout == "AnyLayout", ctx.Where(),
                   ": attribute data_layout '", layout, "' is not supported (expected NCHW)");
  BnShape s{x[0], x[1], 1};
  for (size_t i = 2; i < x.size(); ++i) s.hw = (s.hw < 0 || x[i] < 0) ? -1 : s.hw * x[i];
  return s;
}

template <typename Ctx>
void CheckChannelVector(const Ctx& ctx, const std::string& slot, const Dims& d, int64_t c) {
  FLOTILLA_ENFORCE(d.size() == 1 && !KnownAndDiffer(d[0], c), ctx.Where(), ": ",
                   DescribeInput(ctx, slot, d), " must have shape [", c,
                   "] (one value per channel of X)");
}

// Per-channel statistics: mean, 1/sqrt(var + eps), and the (biased)
// variance for the running update.
struct Stats {
  std::vector<double> mean, inv_std, var;
};

// The batch's statistics, its sums all-reduced across ranks.
template <typename T>
Stats BatchStats(const BnShape& s, const T* x, double eps, const StatsAllReduce& all_reduce) {
  std::vector<double> sums(2 * s.c + 1, 0.0);
  for (int64_t i = 0; i < s.n; ++i) {
    for (int64_t ch = 0; ch < s.c; ++ch) {
      const T* p = x + (i * s.c + ch) * s.hw;
      T a = 0, b = 0;  // one plane in T (vectorised), planes summed in double
      for (int64_t k = 0; k < s.hw; ++k) a += p[k], b += p[k] * p[k];
      sums[ch] += a;
      sums[s.c + ch] += b;
    }
  }
  sums[2 * s.c] = double(s.count());
  if (all_reduce) all_reduce(sums.data(), int64_t(sums.size()));
  const double total = sums[2 * s.c];
  Stats st{std::vector<double>(s.c), std::vector<double>(s.c), std::vector<double>(s.c)};
  for (int64_t ch = 0; ch < s.c; ++ch) {
    st.mean[ch] = sums[ch] / total;
    st.var[ch] = std::max(0.0, sums[s.c + ch] / total - st.mean[ch] * st.mean[ch]);
    st.inv_std[ch] = 1.0 / std::sqrt(st.var[ch] + eps);
  }
  return st;
}

template <typename T>
void Normalize(const BnShape& s, const T* x, const std::vector<double>& mean,
               const std::vector<double>& inv_std, const T* scale, const T* bias, bool relu, T* y) {
  for (int64_t i = 0; i < s.n; ++i) {
    for (int64_t ch = 0; ch < s.c; ++ch) {
      const T a = T(scale[ch] * inv_std[ch]), b = T(bias[ch] - mean[ch] * scale[ch] * inv_std[ch]);
      const T* p = x + (i * s.c + ch) * s.hw;
      T* q = y + (i * s.c + ch) * s.hw;
      if (relu) {
        for (int64_t k = 0; k < s.hw; ++k) q[k] = std::max(T(0), p[k] * a + b);
      } else {
        for (int64_t k = 0; k < s.hw; ++k) q[k] = p[k] * a + b;
      }
    }
  }
}

Tensor* ChannelOutput(ExecutionContext& ctx, const std::string& slot, int64_t c, DType dtype) {
  if (!ctx.HasOutput(slot)) return nullptr;
  Tensor* t = ctx.Output(slot);
  t->Resize({c});
  t->raw_mutable_data(dtype);
  return t;
}

template <typename T>
void StoreChannels(Tensor* t, const std::vector<double>& v, int64_t c) {
  if (t == nullptr) return;
  T* p = t->mutable_data<T>();
  for (int64_t i = 0; i < c; ++i) p[i] = T(v[i]);
}

bool UsesRunningStats(const ExecutionContext& ctx) {
  return ctx.Attr<bool>("is_test") || ctx.Attr<bool>("use_global_stats");
}

template <typename T>
Stats RunningStats(const ExecutionContext& ctx, int64_t c) {
  const T* m = ctx.Input("Mean").data<T>();
  const T* v = ctx.Input("Variance").data<T>();
  const double eps = ctx.Attr<float>("epsilon");
  Stats st{std::vector<double>(m, m + c), std::vector<double>(c), std::vector<double>(v, v + c)};
  for (int64_t i = 0; i < c; ++i) st.inv_std[i] = 1.0 / std::sqrt(st.var[i] + eps);
  return st;
}

template <typename T>
void UpdateRunning(ExecutionContext& ctx, const Stats& batch, int64_t c) {
  const double momentum = ctx.Attr<float>("momentum");
  const T* m = ctx.Input("Mean").data<T>();
  const T* v = ctx.Input("Variance").data<T>();
  std::vector<double> mean(c), var(c);
  for (int64_t i = 0; i < c; ++i) {
    mean[i] = m[i] * momentum + batch.mean[i] * (1 - momentum);
    var[i] = v[i] * momentum + batch.var[i] * (1 - momentum);
  }
  StoreChannels<T>(ChannelOutput(ctx, "MeanOut", c, DTypeOf<T>()), mean, c);
  StoreChannels<T>(ChannelOutput(ctx, "VarianceOut", c, DTypeOf<T>()), var, c);
}

// With running statistics, MeanOut/VarianceOut keep Mean/Variance (a copy
// when they are other variables than the inputs).
void KeepRunning(ExecutionContext& ctx) {
  for (const char* slot : {"Mean", "Variance"}) {
    const std::string out = std::string(slot) + "Out";
    if (!ctx.HasOutput(out)) continue;
    Tensor* t = ctx.Output(out);
    if (!t->SharesBufferWith(ctx.Input(slot))) t->CopyFrom(ctx.Input(slot));
  }
}

template <typename T>
void Forward(ExecutionContext& ctx, const StatsAllReduce& all_reduce) {
  const Tensor& x = ctx.Input("X");
  BnShape s = MakeBnShape(ctx, x.dims());
  for (const char* slot : {"Scale", "Bias", "Mean", "Variance"}) {
    CheckChannelVector(ctx, slot, ctx.Input(slot).dims(), s.c);
    ExpectDType(ctx.Input(slot), x.dtype(), ctx.Where(), slot);
  }
  Stats st;
  if (UsesRunningStats(ctx)) {
    st = RunningStats<T>(ctx, s.c);
    KeepRunning(ctx);
  } else {
    st = BatchStats(s, x.data<T>(), ctx.Attr<float>("epsilon"), all_reduce);
    UpdateRunning<T>(ctx, st, s.c);
  }
  Tensor* y = ctx.Output("Y");
  y->Resize(x.dims());
  Normalize(s, x.data<T>(), st.mean, st.inv_std, ctx.Input("Scale").data<T>(),
            ctx.Input("Bias").data<T>(), ctx.Attr<bool>("fuse_with_relu"), y->mutable_data<T>());
  StoreChannels<T>(ChannelOutput(ctx, "SavedMean", s.c, x.dtype()), st.mean, s.c);
  StoreChannels<T>(ChannelOutput(ctx, "SavedVariance", s.c, x.dtype()), st.inv_std, s.c);
}

// dy masked by the fused relu (Y > 0) when there is one.
template <typename T>
const T* EffectiveDy(ExecutionContext& ctx, const T* dy, int64_t n) {
  if (!ctx.Attr<bool>("fuse_with_relu")) return dy;
  thread_local std::vector<T> buf;  // grows once, reused every step
  if (static_cast<int64_t>(buf.size()) < n) buf.resize(n);
  const T* y = ctx.Input("Y").data<T>();
  for (int64_t i = 0; i < n; ++i) buf[i] = y[i] > T(0) ? dy[i] : T(0);
  return buf.data();
}

template <typename T>
void Backward(ExecutionContext& ctx, const StatsAllReduce& all_reduce) {
  const Tensor& x = ctx.Input("X");
  BnShape s = MakeBnShape(ctx, x.dims());
  const Tensor& dy_t = ctx.Input(GradVarName("Y"));
  CheckGradShape(ctx, dy_t, x.dims(), "Y");
  const T* dy = EffectiveDy(ctx, dy_t.data<T>(), x.numel());
  const T* xp = x.data<T>();
  const T* scale = ctx.Input("Scale").data<T>();
  const bool running = UsesRunningStats(ctx);
  std::vector<double> mean, inv_std;
  if (running) {
    Stats st = RunningStats<T>(ctx, s.c);
    mean = std::move(st.mean);
    inv_std = std::move(st.inv_std);
  } else {
    const T* sm = ctx.Input("SavedMean").data<T>();
    const T* sv = ctx.Input("SavedVariance").data<T>();
    mean.assign(sm, sm + s.c);
    inv_std.assign(sv, sv + s.c);
  }
  // sums[c] = Σ dy, sums[C + c] = Σ dy (x - mean): local first (they give
  // Bias@GRAD and Scale@GRAD), then over every rank's batch for X@GRAD.
  std::vector<double> sums(2 * s.c + 1, 0.0);
  for (int64_t i = 0; i < s.n; ++i) {
    for (int64_t ch = 0; ch < s.c; ++ch) {
      const int64_t off = (i * s.c + ch) * s.hw;
      const T m = T(mean[ch]);
      T a = 0, b = 0;
      for (int64_t k = 0; k < s.hw; ++k) a += dy[off + k], b += dy[off + k] * (xp[off + k] - m);
      sums[ch] += a;
      sums[s.c + ch] += b;
    }
  }
  if (T* ds = GradOutput<T>(ctx, "Scale", {s.c})) {
    for (int64_t ch = 0; ch < s.c; ++ch) ds[ch] = T(sums[s.c + ch] * inv_std[ch]);
  }
  if (T* db = GradOutput<T>(ctx, "Bias", {s.c})) {
    for (int64_t ch = 0; ch < s.c; ++ch) db[ch] = T(sums[ch]);
  }
  T* dx = GradOutput<T>(ctx, "X", x.dims());
  if (dx == nullptr) return;
  sums[2 * s.c] = double(s.count());
  if (!running && all_reduce) all_reduce(sums.data(), int64_t(sums.size()));
  const double total = sums[2 * s.c];
  for (int64_t ch = 0; ch < s.c; ++ch) {
    const double k = scale[ch] * inv_std[ch];
    // dx = k * (dy - mean(dy) - (x - mean) * inv_std^2 * mean(dy (x - mean)))
    //    = a dy + b x + c
    const double mdy = running ? 0 : sums[ch] / total;
    const double c2 = running ? 0 : inv_std[ch] * inv_std[ch] * sums[s.c + ch] / total;
    const T a = T(k), b = T(-k * c2), c = T(k * (mean[ch] * c2 - mdy));
    for (int64_t i = 0; i < s.n; ++i) {
      const int64_t off = (i * s.c + ch) * s.hw;
      for (int64_t j = 0; j < s.hw; ++j) dx[off + j] = a * dy[off + j] + b * xp[off + j] + c;
    }
  }
}

}  // namespace

void BatchNormKernel(ExecutionContext& ctx, const StatsAllReduce& all_reduce) {
  VisitFloatDType(ctx.Input("X").dtype(), ctx.Where(),
                  [&]<typename T>() { Forward<T>(ctx, all_reduce); });
}

void BatchNormGradKernel(ExecutionContext& ctx, const StatsAllReduce& all_reduce) {
  VisitFloatDType(ctx.Input("X").dtype(), ctx.Where(),
                  [&]<typename T>() { Backward<T>(ctx, all_reduce); });
}

void BatchNormInferShape(InferShapeContext& ctx) {
  const Dims x = ctx.InputDim("X");
  BnShape s = MakeBnShape(ctx, x);
  for (const char* slot : {"Scale", "Bias", "Mean", "Variance"}) {
    CheckChannelVector(ctx, slot, ctx.InputDim(slot), s.c);
  }
  ctx.ShareDim("X", "Y");
  for (const char* slot : {"MeanOut", "VarianceOut", "SavedMean", "SavedVariance"}) {
    if (!ctx.HasOutput(slot)) continue;
    ctx.SetOutputDim(slot, {s.c});
    ctx.SetOutputDType(slot, ctx.InputDType("X"));
  }
}

std::vector<OpDesc> BatchNormGradMaker(const OpDesc& fwd, const std::string& grad_type) {
  return GradOpBuilder(fwd, grad_type)
      .ForwardInputs({"X", "Scale", "Bias", "Mean", "Variance"})
      .ForwardOutputs({"Y", "SavedMean", "SavedVariance"})
      .OutputGrads({"Y"})
      .InputGrads({"X", "Scale", "Bias"});
}

AttributeMap BatchNormDefaults() {
  return {{"momentum", 0.9f},          {"epsilon", 1e-5f},
          {"is_test", false},          {"use_global_stats", false},
          {"fuse_with_relu", false},   {"data_layout", std::string("NCHW")},
          {"trainable_statistics", false}};
}

void RegisterBatchNormOps() {
  auto& r = OpRegistry::Global();
  r.Register({.type = "batch_norm",
              .infer_shape = BatchNormInferShape,
              .kernels = {{Place::Kind::kCPU, [](ExecutionContext& ctx) { BatchNormKernel(ctx, nullptr); }}},
              .grad_maker = [](const OpDesc& fwd) { return BatchNormGradMaker(fwd, "batch_norm_grad"); },
              .default_attrs = BatchNormDefaults(),
              .no_grad_inputs = {"Mean", "Variance"}});
  r.Register({.type = "batch_norm_grad",
              .infer_shape = InferGradShapeLikeForward,
              .kernels = {{Place::Kind::kCPU,
                           [](ExecutionContext& ctx) { BatchNormGradKernel(ctx, nullptr); }}}});
}

}  // namespace flotilla::ops
