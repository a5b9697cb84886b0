// Sequence ops that reshape or combine sequences: sequence_conv,
// sequence_concat, sequence_reshape and sequence_slice.
//
// sequence_conv: Out[r] = [X[r+s], ..., X[r+s+L-1]] · Filter with s =
// contextStart, L = contextLength; steps outside r's sequence read zeros.
// The context rows are gathered into one [N, L*D] matrix per run, so the
// product is a single GEMM (and the gradients two).
#include <algorithm>
#include <cstring>

#include "flotilla/core/math.h"
#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "framework/ops/sequence_util.h"

namespace flotilla::ops {
namespace {

// ---- sequence_conv ----

struct Context {
  int64_t length;  // contextLength
  int64_t start;   // contextStart
};

Context ContextOf(const ExecutionContext& ctx) {
  const Context c{ctx.Attr<int32_t>("contextLength"), ctx.Attr<int32_t>("contextStart")};
  FLOTILLA_ENFORCE(c.length >= 1, ctx.Where(), ": contextLength must be >= 1, got ", c.length);
  FLOTILLA_ENFORCE(ctx.Attr<int32_t>("contextStride") == 1, ctx.Where(),
                   ": only contextStride 1 is supported, got ", ctx.Attr<int32_t>("contextStride"));
  FLOTILLA_ENFORCE(!ctx.AttrOr<bool>("paddingTrainable", false), ctx.Where(),
                   ": paddingTrainable is not supported (padding steps read zeros)");
  return c;
}

// Calls fn(r, k, src) for every row r, context slot k and source row src
// inside r's sequence.
template <typename Fn>
void ForEachContextRow(const LoDLevel& off, const Context& c, Fn&& fn) {
  for (int64_t s = 0; s < NumSequences(off); ++s) {
    for (int64_t r = off[s]; r < off[s + 1]; ++r) {
      for (int64_t k = 0; k < c.length; ++k) {
        const int64_t src = r + c.start + k;
        if (src >= off[s] && src < off[s + 1]) fn(r, k, src);
      }
    }
  }
}

void ConvShape(InferShapeContext& ctx) {
  const Dims x = ctx.InputDim("X"), f = ctx.InputDim("Filter");
  FLOTILLA_ENFORCE(x.size() == 2 && f.size() == 2, ctx.Where(), ": X must be [N, D] and Filter [L*D, M], got ",
                   DimsToString(x), " and ", DimsToString(f));
  ctx.SetOutputDim("Out", {x[0], f[1]});
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
  ctx.SetOutputLoDLevel("Out", ctx.InputLoDLevel("X"));
}

void CheckConv(const ExecutionContext& ctx, const Tensor& x, const Tensor& filter, const Context& c) {
  FLOTILLA_ENFORCE(x.rank() == 2 && filter.rank() == 2 && filter.dim(0) == c.length * x.dim(1), ctx.Where(),
                   ": Filter must be [contextLength * D, M] = [", c.length * (x.rank() == 2 ? x.dim(1) : 0),
                   ", M] for X ", DimsToString(x.dims()), ", got ", DimsToString(filter.dims()));
}

template <typename T>
std::vector<T> ContextMatrix(const LoDLevel& off, const Context& c, const T* x, int64_t n, int64_t d) {
  std::vector<T> col(static_cast<size_t>(n * c.length * d), T(0));
  ForEachContextRow(off, c, [&](int64_t r, int64_t k, int64_t src) {
    std::copy(x + src * d, x + (src + 1) * d, col.data() + (r * c.length + k) * d);
  });
  return col;
}

void ConvKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const LoDLevel& off = SequenceOffsets(x, ctx.Where());
  const Tensor& filter = ctx.Input("Filter");
  const Context c = ContextOf(ctx);
  CheckConv(ctx, x, filter, c);
  const int64_t n = x.dim(0), d = x.dim(1), m = filter.dim(1);
  Tensor* out = ctx.Output("Out");
  out->Resize({n, m});
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    const std::vector<T> col = ContextMatrix(off, c, x.data<T>(), n, d);
    math::Gemm(false, false, n, m, c.length * d, T(1), col.data(), c.length * d, filter.data<T>(), m, T(0),
               out->mutable_data<T>(), m);
  });
  out->ShareLoD(x);
}

void ConvGradKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const LoDLevel& off = SequenceOffsets(x, ctx.Where());
  const Tensor& filter = ctx.Input("Filter");
  const Context c = ContextOf(ctx);
  CheckConv(ctx, x, filter, c);
  const Tensor& g = ctx.Input("Out@GRAD");
  const int64_t n = x.dim(0), d = x.dim(1), m = filter.dim(1), kd = c.length * d;
  FLOTILLA_ENFORCE(g.numel() == n * m, ctx.Where(), ": Out@GRAD has shape ", DimsToString(g.dims()),
                   ", expected [", n, ", ", m, "]");
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    if (ctx.HasOutput("Filter@GRAD")) {
      Tensor* df = ctx.Output("Filter@GRAD");
      df->Resize(filter.dims());
      const std::vector<T> col = ContextMatrix(off, c, x.data<T>(), n, d);
      math::Gemm(true, false, kd, m, n, T(1), col.data(), kd, g.data<T>(), m, T(0), df->mutable_data<T>(), m);
    }
    if (ctx.HasOutput("X@GRAD")) {
      std::vector<T> dcol(static_cast<size_t>(n * kd));
      math::Gemm(false, true, n, kd, m, T(1), g.data<T>(), m, filter.data<T>(), m, T(0), dcol.data(), kd);
      Tensor* dx = ctx.Output("X@GRAD");
      dx->Resize(x.dims());
      T* dxp = dx->mutable_data<T>();
      std::fill(dxp, dxp + n * d, T(0));
      ForEachContextRow(off, c, [&](int64_t r, int64_t k, int64_t src) {
        const T* from = dcol.data() + (r * c.length + k) * d;
        for (int64_t j = 0; j < d; ++j) dxp[src * d + j] += from[j];
      });
      dx->ShareLoD(x);
    }
  });
}

// ---- sequence_concat: sequence i of Out = sequence i of X[0], X[1], ... ----

struct ConcatPlan {
  std::vector<const LoDLevel*> offsets;  // per input
  LoDLevel out;
  int64_t width = 0;
};

ConcatPlan PlanConcat(const ExecutionContext& ctx, const std::vector<const Tensor*>& xs) {
  FLOTILLA_ENFORCE(!xs.empty(), ctx.Where(), ": X needs at least one input");
  ConcatPlan p;
  p.width = RowWidth(*xs[0]);
  for (size_t k = 0; k < xs.size(); ++k) {
    const std::string slot = "X[" + std::to_string(k) + "]";
    p.offsets.push_back(&SequenceOffsets(*xs[k], ctx.Where(), slot));
    FLOTILLA_ENFORCE(RowWidth(*xs[k]) == p.width && xs[k]->dtype() == xs[0]->dtype() &&
                         NumSequences(*p.offsets[k]) == NumSequences(*p.offsets[0]),
                     ctx.Where(), ": ", slot, " (", DimsToString(xs[k]->dims()), ", ",
                     NumSequences(*p.offsets[k]), " sequences) does not match X[0] (",
                     DimsToString(xs[0]->dims()), ", ", NumSequences(*p.offsets[0]), " sequences)");
  }
  p.out = {0};
  for (int64_t s = 0; s < NumSequences(*p.offsets[0]); ++s) {
    int64_t n = 0;
    for (const LoDLevel* off : p.offsets) n += (*off)[s + 1] - (*off)[s];
    p.out.push_back(p.out.back() + n);
  }
  return p;
}

// Calls fn(k, first source row, first output row, rows) per copied block.
template <typename Fn>
void ForEachConcatBlock(const ConcatPlan& p, Fn&& fn) {
  int64_t o = 0;
  for (int64_t s = 0; s + 1 < static_cast<int64_t>(p.out.size()); ++s) {
    for (size_t k = 0; k < p.offsets.size(); ++k) {
      const LoDLevel& off = *p.offsets[k];
      fn(k, off[s], o, off[s + 1] - off[s]);
      o += off[s + 1] - off[s];
    }
  }
}

void ConcatKernel(ExecutionContext& ctx) {
  const std::vector<const Tensor*> xs = ctx.MultiInput("X");
  const ConcatPlan p = PlanConcat(ctx, xs);
  Tensor* out = ctx.Output("Out");
  out->Resize(WithRows(xs[0]->dims(), p.out.back()));
  const size_t row_bytes = static_cast<size_t>(p.width) * SizeOf(xs[0]->dtype());
  char* dst = static_cast<char*>(out->raw_mutable_data(xs[0]->dtype()));
  ForEachConcatBlock(p, [&](size_t k, int64_t src, int64_t o, int64_t rows) {
    if (rows > 0) {
      std::memcpy(dst + static_cast<size_t>(o) * row_bytes,
                  static_cast<const char*>(xs[k]->raw_data()) + static_cast<size_t>(src) * row_bytes,
                  static_cast<size_t>(rows) * row_bytes);
    }
  });
  out->set_lod({p.out});
}

void ConcatGradKernel(ExecutionContext& ctx) {
  const std::vector<const Tensor*> xs = ctx.MultiInput("X");
  const ConcatPlan p = PlanConcat(ctx, xs);
  const Tensor& g = ctx.Input("Out@GRAD");
  FLOTILLA_ENFORCE(g.numel() == p.out.back() * p.width, ctx.Where(), ": Out@GRAD has shape ",
                   DimsToString(g.dims()), " for ", p.out.back(), " rows of width ", p.width);
  std::vector<Tensor*> dxs(xs.size(), nullptr);
  for (size_t k = 0; k < xs.size(); ++k) {
    if (ctx.OutputVar("X@GRAD", k) == nullptr) continue;
    dxs[k] = ctx.Output("X@GRAD", k);
    dxs[k]->Resize(xs[k]->dims());
    dxs[k]->raw_mutable_data(g.dtype());
    dxs[k]->ShareLoD(*xs[k]);
  }
  const size_t row_bytes = static_cast<size_t>(p.width) * SizeOf(g.dtype());
  ForEachConcatBlock(p, [&](size_t k, int64_t src, int64_t o, int64_t rows) {
    if (dxs[k] == nullptr || rows == 0) return;
    std::memcpy(static_cast<char*>(dxs[k]->raw_data()) + static_cast<size_t>(src) * row_bytes,
                static_cast<const char*>(g.raw_data()) + static_cast<size_t>(o) * row_bytes,
                static_cast<size_t>(rows) * row_bytes);
  });
}

// ---- sequence_reshape: rows of width D regrouped as rows of new_dim ----

LoDLevel ReshapedOffsets(const ExecutionContext& ctx, const Tensor& x) {
  const LoDLevel& off = SequenceOffsets(x, ctx.Where());
  const int64_t d = RowWidth(x), nd = ctx.Attr<int32_t>("new_dim");
  FLOTILLA_ENFORCE(nd >= 1, ctx.Where(), ": new_dim must be >= 1, got ", nd);
  LoDLevel out;
  for (int64_t o : off) {
    FLOTILLA_ENFORCE((o * d) % nd == 0, ctx.Where(), ": a sequence ending at row ", o, " of width ", d,
                     " does not split into rows of new_dim ", nd);
    out.push_back(o * d / nd);
  }
  return out;
}

void ReshapeShape(InferShapeContext& ctx) {
  ctx.SetOutputDim("Out", {-1, ctx.Attr<int32_t>("new_dim")});
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
  ctx.SetOutputLoDLevel("Out", 1);
}

void ReshapeKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  LoDLevel off = ReshapedOffsets(ctx, x);
  Tensor* out = ctx.Output("Out");
  out->CopyFrom(x);
  out->Reshape({off.back(), ctx.Attr<int32_t>("new_dim")});
  out->set_lod({std::move(off)});
}

void ReshapeGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  ReshapedOffsets(ctx, x);
  const Tensor& g = ctx.Input("Out@GRAD");
  FLOTILLA_ENFORCE(g.numel() == x.numel(), ctx.Where(), ": Out@GRAD has ", g.numel(), " elements, X ",
                   x.numel());
  Tensor* dx = ctx.Output("X@GRAD");
  dx->CopyFrom(g);
  dx->Reshape(x.dims());
  dx->ShareLoD(x);
}

// ---- sequence_slice: rows [Offset[i], Offset[i] + Length[i]) of sequence i ----

struct SliceRows {
  LoDLevel src;  // first source row per sequence
  LoDLevel out;  // output offsets
};

SliceRows PlanSlice(const ExecutionContext& ctx, const Tensor& x) {
  const LoDLevel& off = SequenceOffsets(x, ctx.Where());
  const Tensor& offset = ctx.Input("Offset");
  const Tensor& length = ctx.Input("Length");
  const int64_t seqs = NumSequences(off);
  FLOTILLA_ENFORCE(offset.dtype() == DType::kInt64 && length.dtype() == DType::kInt64 &&
                       offset.numel() == seqs && length.numel() == seqs,
                   ctx.Where(), ": Offset and Length must be int64 with one entry per sequence (", seqs,
                   "), got ", DimsToString(offset.dims()), " and ", DimsToString(length.dims()));
  SliceRows p{{}, {0}};
  for (int64_t s = 0; s < seqs; ++s) {
    const int64_t b = offset.data<int64_t>()[s], n = length.data<int64_t>()[s];
    FLOTILLA_ENFORCE(b >= 0 && n >= 0 && b + n <= off[s + 1] - off[s], ctx.Where(), ": slice [", b, ", ",
                     b + n, ") of sequence ", s, " is outside its ", off[s + 1] - off[s], " steps");
    p.src.push_back(off[s] + b);
    p.out.push_back(p.out.back() + n);
  }
  return p;
}

void SliceShape(InferShapeContext& ctx) {
  ctx.SetOutputDim("Out", WithRows(ctx.InputDim("X"), -1));
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
  ctx.SetOutputLoDLevel("Out", 1);
}

void SliceKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  SliceRows p = PlanSlice(ctx, x);
  Tensor* out = ctx.Output("Out");
  out->Resize(WithRows(x.dims(), p.out.back()));
  const size_t row_bytes = static_cast<size_t>(RowWidth(x)) * SizeOf(x.dtype());
  char* dst = static_cast<char*>(out->raw_mutable_data(x.dtype()));
  for (size_t s = 0; s < p.src.size(); ++s) {
    const size_t bytes = static_cast<size_t>(p.out[s + 1] - p.out[s]) * row_bytes;
    if (bytes == 0) continue;
    std::memcpy(dst + static_cast<size_t>(p.out[s]) * row_bytes,
                static_cast<const char*>(x.raw_data()) + static_cast<size_t>(p.src[s]) * row_bytes, bytes);
  }
  out->set_lod({std::move(p.out)});
}

void SliceGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const SliceRows p = PlanSlice(ctx, x);
  const Tensor& g = ctx.Input("Out@GRAD");
  const size_t row_bytes = static_cast<size_t>(RowWidth(x)) * SizeOf(g.dtype());
  FLOTILLA_ENFORCE(g.numel() == p.out.back() * RowWidth(x), ctx.Where(), ": Out@GRAD has shape ",
                   DimsToString(g.dims()), " for ", p.out.back(), " sliced rows");
  Tensor* dx = ctx.Output("X@GRAD");
  dx->Resize(x.dims());
  dx->set_dtype(g.dtype());
  dx->SetZero();
  for (size_t s = 0; s < p.src.size(); ++s) {
    const size_t bytes = static_cast<size_t>(p.out[s + 1] - p.out[s]) * row_bytes;
    if (bytes == 0) continue;
    std::memcpy(static_cast<char*>(dx->raw_data()) + static_cast<size_t>(p.src[s]) * row_bytes,
                static_cast<const char*>(g.raw_data()) + static_cast<size_t>(p.out[s]) * row_bytes, bytes);
  }
  dx->ShareLoD(x);
}

void ConcatShape(InferShapeContext& ctx) {
  ctx.SetOutputDim("Out", WithRows(ctx.InputDim("X"), -1));
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
  ctx.SetOutputLoDLevel("Out", 1);
}

}  // namespace

void RegisterSequenceConvOps() {
  auto& r = OpRegistry::Global();
  const AttributeMap conv_attrs = {{"contextLength", int32_t{3}},
                                   {"contextStart", int32_t{-1}},
                                   {"contextStride", int32_t{1}},
                                   {"paddingTrainable", false}};
  r.RegisterWithGrad({.type = "sequence_conv",
                      .infer_shape = ConvShape,
                      .kernels = {{Place::Kind::kCPU, ConvKernel}},
                      .default_attrs = conv_attrs},
                     {.forward_inputs = {"X", "Filter"}, .output_grads = {"Out"}, .input_grads = {"X", "Filter"}},
                     ConvGradKernel);
  r.RegisterWithGrad(
      {.type = "sequence_concat", .infer_shape = ConcatShape, .kernels = {{Place::Kind::kCPU, ConcatKernel}}},
      SequenceGrad({"X"}), ConcatGradKernel);
  r.RegisterWithGrad({.type = "sequence_reshape",
                      .infer_shape = ReshapeShape,
                      .kernels = {{Place::Kind::kCPU, ReshapeKernel}},
                      .default_attrs = {{"new_dim", int32_t{1}}}},
                     SequenceGrad({"X"}), ReshapeGradKernel);
  r.RegisterWithGrad({.type = "sequence_slice",
                      .infer_shape = SliceShape,
                      .kernels = {{Place::Kind::kCPU, SliceKernel}},
                      .no_grad_inputs = {"Offset", "Length"}},
                     SequenceGrad({"X", "Offset", "Length"}), SliceGradKernel);
}

}  // namespace flotilla::ops
