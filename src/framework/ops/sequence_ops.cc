// Sequence ops over LoD tensors (variable-length sequences packed along the
// first dimension, see core/lod.h): sequence_pool, sequence_softmax,
// sequence_reverse, sequence_expand and sequence_expand_as.
//
// Kernels walk the packed rows with the offsets directly: one pass over the
// data, no per-sequence tensors. An empty sequence pools to pad_value and
// receives no gradient.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "framework/ops/sequence_util.h"

namespace flotilla::ops {
namespace {

// ---- sequence_pool: one row per sequence (pooltype SUM, AVERAGE, SQRT,
// MAX, FIRST, LAST); Out keeps X's outer levels ----

enum class Pool { kSum, kAverage, kSqrt, kMax, kFirst, kLast };

Pool ParsePool(const std::string& name, const std::string& where) {
  if (name == "SUM") return Pool::kSum;
  if (name == "AVERAGE") return Pool::kAverage;
  if (name == "SQRT") return Pool::kSqrt;
  if (name == "MAX") return Pool::kMax;
  if (name == "FIRST") return Pool::kFirst;
  if (name == "LAST") return Pool::kLast;
  FLOTILLA_THROW(InvalidArgument, where, ": attribute 'pooltype' = '", name,
                 "' is not one of SUM, AVERAGE, SQRT, MAX, FIRST, LAST");
}

void SequencePoolShape(InferShapeContext& ctx) {
  ParsePool(ctx.Attr<std::string>("pooltype"), ctx.Where());
  ctx.SetOutputDim("Out", WithRows(ctx.InputDim("X"), -1));
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
  ctx.SetOutputLoDLevel("Out", std::max(0, ctx.InputLoDLevel("X") - 1));
  if (ctx.HasOutput("MaxIndex")) {
    ctx.SetOutputDim("MaxIndex", WithRows(ctx.InputDim("X"), -1));
    ctx.SetOutputDType("MaxIndex", DType::kInt32);
  }
}

// The scale a sum of n rows takes for `pool`.
template <typename T>
T PoolScale(Pool pool, int64_t n) {
  if (pool == Pool::kAverage) return T(1) / static_cast<T>(n);
  if (pool == Pool::kSqrt) return T(1) / std::sqrt(static_cast<T>(n));
  return T(1);
}

// Out row = the max of each column over rows [b, e); idx = their rows.
template <typename T>
void MaxRows(const T* x, int64_t b, int64_t e, int64_t w, T* out, int32_t* idx) {
  std::copy(x + b * w, x + (b + 1) * w, out);
  if (idx) std::fill(idx, idx + w, static_cast<int32_t>(b));
  for (int64_t r = b + 1; r < e; ++r) {
    const T* row = x + r * w;
    for (int64_t j = 0; j < w; ++j) {
      if (row[j] > out[j]) {
        out[j] = row[j];
        if (idx) idx[j] = static_cast<int32_t>(r);
      }
    }
  }
}

template <typename T>
void PoolForward(Pool pool, const LoDLevel& off, const T* x, int64_t w, T pad, T* out, int32_t* idx) {
  for (int64_t s = 0; s < NumSequences(off); ++s) {
    const int64_t b = off[s], e = off[s + 1];
    T* o = out + s * w;
    if (b == e) {
      std::fill(o, o + w, pad);
      if (idx) std::fill(idx + s * w, idx + (s + 1) * w, -1);
      continue;
    }
    if (pool == Pool::kMax) {
      MaxRows(x, b, e, w, o, idx ? idx + s * w : nullptr);
    } else if (pool == Pool::kFirst || pool == Pool::kLast) {
      const int64_t r = pool == Pool::kFirst ? b : e - 1;
      std::copy(x + r * w, x + (r + 1) * w, o);
    } else {
      std::fill(o, o + w, T(0));
      for (int64_t r = b; r < e; ++r) {
        for (int64_t j = 0; j < w; ++j) o[j] += x[r * w + j];
      }
      const T k = PoolScale<T>(pool, e - b);
      if (k != T(1)) for (int64_t j = 0; j < w; ++j) o[j] *= k;
    }
  }
}

void SequencePoolKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const LoDLevel& off = SequenceOffsets(x, ctx.Where());
  const Pool pool = ParsePool(ctx.Attr<std::string>("pooltype"), ctx.Where());
  const int64_t w = RowWidth(x), seqs = NumSequences(off);
  Tensor* out = ctx.Output("Out");
  out->Resize(WithRows(x.dims(), seqs));
  int32_t* idx = nullptr;
  if (ctx.HasOutput("MaxIndex")) {
    Tensor* max_index = ctx.Output("MaxIndex");
    max_index->Resize(pool == Pool::kMax ? WithRows(x.dims(), seqs) : Dims{0});
    idx = max_index->mutable_data<int32_t>();
    if (pool != Pool::kMax) idx = nullptr;
  }
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    PoolForward<T>(pool, off, x.data<T>(), w, static_cast<T>(ctx.Attr<float>("pad_value")),
                   out->mutable_data<T>(), idx);
  });
  out->set_lod(OuterLevels(x));
}

template <typename T>
void PoolBackward(Pool pool, const LoDLevel& off, const T* x, const T* g, int64_t w, T* dx) {
  std::vector<int32_t> arg(pool == Pool::kMax ? static_cast<size_t>(w) : 0);
  std::vector<T> best(arg.size());
  for (int64_t s = 0; s < NumSequences(off); ++s) {
    const int64_t b = off[s], e = off[s + 1];
    const T* gs = g + s * w;
    if (b == e) continue;
    if (pool == Pool::kMax) {
      MaxRows(x, b, e, w, best.data(), arg.data());
      for (int64_t j = 0; j < w; ++j) dx[arg[j] * w + j] = gs[j];
    } else if (pool == Pool::kFirst || pool == Pool::kLast) {
      const int64_t r = pool == Pool::kFirst ? b : e - 1;
      std::copy(gs, gs + w, dx + r * w);
    } else {
      const T k = PoolScale<T>(pool, e - b);
      for (int64_t r = b; r < e; ++r) {
        for (int64_t j = 0; j < w; ++j) dx[r * w + j] = gs[j] * k;
      }
    }
  }
}

void SequencePoolGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const LoDLevel& off = SequenceOffsets(x, ctx.Where());
  const Pool pool = ParsePool(ctx.Attr<std::string>("pooltype"), ctx.Where());
  const Tensor& g = ctx.Input("Out@GRAD");
  const int64_t w = RowWidth(x);
  FLOTILLA_ENFORCE(g.numel() == NumSequences(off) * w, ctx.Where(), ": Out@GRAD has shape ",
                   DimsToString(g.dims()), " for ", NumSequences(off), " sequences of width ", w);
  Tensor* dx = ctx.Output("X@GRAD");
  dx->Resize(x.dims());
  dx->set_dtype(x.dtype());
  dx->SetZero();
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    PoolBackward<T>(pool, off, x.data<T>(), g.data<T>(), w, dx->data<T>());
  });
  dx->ShareLoD(x);
}

// ---- sequence_softmax: softmax over each sequence of a [N] / [N, 1] X ----

void CheckSoftmaxInput(const Tensor& x, const std::string& where) {
  FLOTILLA_ENFORCE(x.rank() == 1 || (x.rank() == 2 && x.dim(1) == 1), where,
                   ": X must be [N] or [N, 1] (one value per step), got ", DimsToString(x.dims()));
}

template <typename T>
void SoftmaxForward(const LoDLevel& off, const T* x, T* out) {
  for (int64_t s = 0; s < NumSequences(off); ++s) {
    const int64_t b = off[s], e = off[s + 1];
    if (b == e) continue;
    const T m = *std::max_element(x + b, x + e);
    T sum = 0;
    for (int64_t r = b; r < e; ++r) sum += out[r] = std::exp(x[r] - m);
    for (int64_t r = b; r < e; ++r) out[r] /= sum;
  }
}

void SequenceSoftmaxKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const LoDLevel& off = SequenceOffsets(x, ctx.Where());
  CheckSoftmaxInput(x, ctx.Where());
  Tensor* out = ctx.Output("Out");
  out->Resize(x.dims());
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    SoftmaxForward<T>(off, x.data<T>(), out->mutable_data<T>());
  });
  out->ShareLoD(x);
}

template <typename T>
void SoftmaxBackward(const LoDLevel& off, const T* y, const T* g, T* dx) {
  for (int64_t s = 0; s < NumSequences(off); ++s) {
    const int64_t b = off[s], e = off[s + 1];
    T dot = 0;
    for (int64_t r = b; r < e; ++r) dot += g[r] * y[r];
    for (int64_t r = b; r < e; ++r) dx[r] = y[r] * (g[r] - dot);
  }
}

void SequenceSoftmaxGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const LoDLevel& off = SequenceOffsets(x, ctx.Where());
  const Tensor& y = ctx.Input("Out");
  const Tensor& g = ctx.Input("Out@GRAD");
  FLOTILLA_ENFORCE(g.numel() == x.numel() && y.numel() == x.numel(), ctx.Where(),
                   ": Out and Out@GRAD must have X's ", x.numel(), " elements");
  Tensor* dx = ctx.Output("X@GRAD");
  dx->Resize(x.dims());
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    SoftmaxBackward<T>(off, y.data<T>(), g.data<T>(), dx->mutable_data<T>());
  });
  dx->ShareLoD(x);
}

// ---- sequence_reverse: Y = each sequence of X with its rows reversed ----

void ReverseRows(const LoDLevel& off, const char* x, size_t row_bytes, char* y) {
  for (int64_t s = 0; s < NumSequences(off); ++s) {
    const int64_t b = off[s], e = off[s + 1];
    for (int64_t r = b; r < e; ++r) {
      std::memcpy(y + static_cast<size_t>(b + e - 1 - r) * row_bytes, x + static_cast<size_t>(r) * row_bytes,
                  row_bytes);
    }
  }
}

// Y (or X@GRAD) = X (or Y@GRAD) with every sequence of X reversed.
void ReverseKernel(ExecutionContext& ctx, const std::string& in, const std::string& out) {
  if (!ctx.HasOutput(out)) return;
  const Tensor& x = ctx.Input("X");
  const LoDLevel& off = SequenceOffsets(x, ctx.Where());
  const Tensor& src = ctx.Input(in);
  FLOTILLA_ENFORCE(src.numel() == x.numel(), ctx.Where(), ": ", in, " must have X's shape ",
                   DimsToString(x.dims()), ", got ", DimsToString(src.dims()));
  Tensor* dst = ctx.Output(out);
  dst->Resize(x.dims());
  const size_t row_bytes = static_cast<size_t>(RowWidth(x)) * SizeOf(src.dtype());
  ReverseRows(off, static_cast<const char*>(src.raw_data()), row_bytes,
              static_cast<char*>(dst->raw_mutable_data(src.dtype())));
  dst->ShareLoD(x);
}

// ---- sequence_expand_as: row s of X repeated once per step of Y's sequence s ----

void ExpandAsShape(InferShapeContext& ctx) {
  ctx.SetOutputDim("Out", WithRows(ctx.InputDim("X"), -1));
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
  ctx.SetOutputLoDLevel("Out", 1);
}

void CheckExpandAs(const ExecutionContext& ctx, const Tensor& x, const LoDLevel& ref) {
  FLOTILLA_ENFORCE(x.rank() >= 1 && x.dim(0) == NumSequences(ref), ctx.Where(), ": X has ",
                   x.rank() ? x.dim(0) : 0, " rows but Y has ", NumSequences(ref),
                   " sequences (one row of X per sequence of Y)");
}

void ExpandAsKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const LoDLevel& ref = SequenceOffsets(ctx.Input("Y"), ctx.Where(), "Y");
  CheckExpandAs(ctx, x, ref);
  Tensor* out = ctx.Output("Out");
  out->Resize(WithRows(x.dims(), ref.back()));
  const size_t row_bytes = static_cast<size_t>(RowWidth(x)) * SizeOf(x.dtype());
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(out->raw_mutable_data(x.dtype()));
  for (int64_t s = 0; s < NumSequences(ref); ++s) {
    for (int64_t r = ref[s]; r < ref[s + 1]; ++r) {
      std::memcpy(dst + static_cast<size_t>(r) * row_bytes, src + static_cast<size_t>(s) * row_bytes, row_bytes);
    }
  }
  out->set_lod({ref});
}

void ExpandAsGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const LoDLevel& ref = SequenceOffsets(ctx.Input("Y"), ctx.Where(), "Y");
  CheckExpandAs(ctx, x, ref);
  const Tensor& g = ctx.Input("Out@GRAD");
  const int64_t w = RowWidth(x);
  FLOTILLA_ENFORCE(g.numel() == ref.back() * w, ctx.Where(), ": Out@GRAD has shape ",
                   DimsToString(g.dims()), " for ", ref.back(), " rows of width ", w);
  Tensor* dx = ctx.Output("X@GRAD");
  dx->Resize(x.dims());
  dx->set_dtype(x.dtype());
  dx->SetZero();
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    const T* gp = g.data<T>();
    T* d = dx->data<T>();
    for (int64_t s = 0; s < NumSequences(ref); ++s) {
      for (int64_t r = ref[s]; r < ref[s + 1]; ++r) {
        for (int64_t j = 0; j < w; ++j) d[s * w + j] += gp[r * w + j];
      }
    }
  });
  dx->ShareLoD(x);
}

// ---- sequence_expand: sequence i of X (row i when X is dense) repeated
// once per step of sequence i of Y's level ref_level ----

struct ExpandPlan {
  LoDLevel x_seqs;  // X's sequences: its offsets, or one per row
  LoDLevel ref;     // repeats of sequence i: ref[i+1] - ref[i]
  bool x_has_lod = false;
};

ExpandPlan PlanExpand(const ExecutionContext& ctx, const Tensor& x, const Tensor& y) {
  ExpandPlan p;
  SequenceOffsets(y, ctx.Where(), "Y");
  int level = ctx.Attr<int32_t>("ref_level");
  const int levels = y.lod_level();
  if (level == -1) level = levels - 1;
  FLOTILLA_ENFORCE(level >= 0 && level < levels, ctx.Where(), ": ref_level ",
                   ctx.Attr<int32_t>("ref_level"), " is out of range for Y with ", levels, " LoD levels");
  p.ref = y.lod()[static_cast<size_t>(level)];
  p.x_has_lod = x.has_lod();
  if (p.x_has_lod) {
    FLOTILLA_ENFORCE(x.lod_level() == 1, ctx.Where(), ": X must have at most 1 LoD level, got ",
                     x.lod_level());
    p.x_seqs = SequenceOffsets(x, ctx.Where());
  } else {
    FLOTILLA_ENFORCE(x.rank() >= 1, ctx.Where(), ": X must have a first dimension");
    p.x_seqs.resize(static_cast<size_t>(x.dim(0)) + 1);
    for (size_t i = 0; i < p.x_seqs.size(); ++i) p.x_seqs[i] = static_cast<int64_t>(i);
  }
  FLOTILLA_ENFORCE(NumSequences(p.x_seqs) == NumSequences(p.ref), ctx.Where(), ": X has ",
                   NumSequences(p.x_seqs), p.x_has_lod ? " sequences" : " rows", " but level ", level,
                   " of Y has ", NumSequences(p.ref), " sequences");
  return p;
}

// Calls fn(x_row, out_row) for every row copied, in output order; returns
// the output offsets (one sequence per repeat).
template <typename Fn>
LoDLevel ForEachExpandedRow(const ExpandPlan& p, Fn&& fn) {
  LoDLevel out_lod{0};
  int64_t o = 0;
  for (int64_t i = 0; i < NumSequences(p.ref); ++i) {
    for (int64_t k = p.ref[i]; k < p.ref[i + 1]; ++k) {
      for (int64_t r = p.x_seqs[i]; r < p.x_seqs[i + 1]; ++r) fn(r, o++);
      out_lod.push_back(o);
    }
  }
  return out_lod;
}

void ExpandShape(InferShapeContext& ctx) {
  ctx.SetOutputDim("Out", WithRows(ctx.InputDim("X"), -1));
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
  ctx.SetOutputLoDLevel("Out", ctx.InputLoDLevel("X"));
}

void ExpandKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const ExpandPlan p = PlanExpand(ctx, x, ctx.Input("Y"));
  int64_t rows = 0;
  ForEachExpandedRow(p, [&](int64_t, int64_t) { ++rows; });
  Tensor* out = ctx.Output("Out");
  out->Resize(WithRows(x.dims(), rows));
  const size_t row_bytes = static_cast<size_t>(RowWidth(x)) * SizeOf(x.dtype());
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(out->raw_mutable_data(x.dtype()));
  LoDLevel out_lod = ForEachExpandedRow(p, [&](int64_t r, int64_t o) {
    std::memcpy(dst + static_cast<size_t>(o) * row_bytes, src + static_cast<size_t>(r) * row_bytes, row_bytes);
  });
  out->set_lod(p.x_has_lod ? LoD{std::move(out_lod)} : LoD{});
}

void ExpandGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const ExpandPlan p = PlanExpand(ctx, x, ctx.Input("Y"));
  const Tensor& g = ctx.Input("Out@GRAD");
  const int64_t w = RowWidth(x);
  Tensor* dx = ctx.Output("X@GRAD");
  dx->Resize(x.dims());
  dx->set_dtype(x.dtype());
  dx->SetZero();
  int64_t rows = 0;
  ForEachExpandedRow(p, [&](int64_t, int64_t) { ++rows; });
  FLOTILLA_ENFORCE(g.numel() == rows * w, ctx.Where(), ": Out@GRAD has shape ", DimsToString(g.dims()),
                   " for ", rows, " expanded rows of width ", w);
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    const T* gp = g.data<T>();
    T* d = dx->data<T>();
    ForEachExpandedRow(p, [&](int64_t r, int64_t o) {
      for (int64_t j = 0; j < w; ++j) d[r * w + j] += gp[o * w + j];
    });
  });
  dx->ShareLoD(x);
}

// ---- registration ----

void RegisterSequencePool(OpRegistry& r) {
  AttributeMap attrs = {{"pooltype", std::string("AVERAGE")}, {"is_test", false}, {"pad_value", 0.0f}};
  r.RegisterWithGrad({.type = "sequence_pool",
                      .infer_shape = SequencePoolShape,
                      .kernels = {{Place::Kind::kCPU, SequencePoolKernel}},
                      .default_attrs = attrs},
                     SequenceGrad({"X"}), SequencePoolGradKernel);
}

void RegisterSequenceSoftmax(OpRegistry& r) {
  r.RegisterWithGrad({.type = "sequence_softmax",
                      .infer_shape = [](InferShapeContext& ctx) { ctx.ShareDim("X", "Out"); },
                      .kernels = {{Place::Kind::kCPU, SequenceSoftmaxKernel}},
                      .share_lod = {{"X", "Out"}}},
                     SequenceGrad({"X"}, {"Out"}), SequenceSoftmaxGradKernel);
}

void RegisterSequenceReverse(OpRegistry& r) {
  r.RegisterWithGrad({.type = "sequence_reverse",
                      .infer_shape = [](InferShapeContext& ctx) { ctx.ShareDim("X", "Y"); },
                      .kernels = {{Place::Kind::kCPU, [](ExecutionContext& ctx) { ReverseKernel(ctx, "X", "Y"); }}},
                      .share_lod = {{"X", "Y"}}},
                     SequenceGrad({"X"}, {}, "Y"),
                     [](ExecutionContext& ctx) { ReverseKernel(ctx, "Y@GRAD", "X@GRAD"); });
}

void RegisterSequenceExpand(OpRegistry& r) {
  r.RegisterWithGrad({.type = "sequence_expand",
                      .infer_shape = ExpandShape,
                      .kernels = {{Place::Kind::kCPU, ExpandKernel}},
                      .default_attrs = {{"ref_level", int32_t{-1}}},
                      .no_grad_inputs = {"Y"}},
                     SequenceGrad({"X", "Y"}), ExpandGradKernel);
  r.RegisterWithGrad({.type = "sequence_expand_as",
                      .infer_shape = ExpandAsShape,
                      .kernels = {{Place::Kind::kCPU, ExpandAsKernel}},
                      .no_grad_inputs = {"Y"}},
                     SequenceGrad({"X", "Y"}), ExpandAsGradKernel);
}

}  // namespace

void RegisterSequenceOps() {
  auto& r = OpRegistry::Global();
  RegisterSequencePool(r);
  RegisterSequenceSoftmax(r);
  RegisterSequenceReverse(r);
  RegisterSequenceExpand(r);
}

}  // namespace flotilla::ops
