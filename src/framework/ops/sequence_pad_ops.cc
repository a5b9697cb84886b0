// Between LoD sequences and padded batches: sequence_pad, sequence_unpad,
// sequence_mask; and sequence_enumerate (sliding windows of ids).
//
// sequence_pad: X (LoD, N rows of width w) → Out [S, L, ...] with each
// sequence's rows first and PadValue after, and Length [S] (int64). L is
// attribute padded_length, or the longest sequence when it is -1.
// sequence_unpad is its inverse: X [S, L, ...] and Length → the rows of each
// sequence, packed, with offsets from Length.
#include <algorithm>
#include <cstring>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "framework/ops/sequence_util.h"

namespace flotilla::ops {
namespace {

int64_t LongestSequence(const LoDLevel& off) {
  int64_t longest = 0;
  for (int64_t s = 0; s < NumSequences(off); ++s) longest = std::max(longest, off[s + 1] - off[s]);
  return longest;
}

// [S, L, rest of x].
Dims PaddedDims(const Dims& x, int64_t seqs, int64_t len) {
  Dims out{seqs, len};
  out.insert(out.end(), x.begin() + 1, x.end());
  return out;
}

void PadShape(InferShapeContext& ctx) {
  const Dims x = ctx.InputDim("X");
  FLOTILLA_ENFORCE(!x.empty(), ctx.Where(), ": X needs a first dimension");
  const int64_t len = ctx.Attr<int32_t>("padded_length");
  ctx.SetOutputDim("Out", PaddedDims(x, -1, len < 0 ? -1 : len));
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
  ctx.SetOutputDim("Length", {-1});
  ctx.SetOutputDType("Length", DType::kInt64);
}

int64_t PaddedLength(const ExecutionContext& ctx, const LoDLevel& off) {
  const int64_t longest = LongestSequence(off);
  const int64_t len = ctx.Attr<int32_t>("padded_length");
  if (len < 0) return longest;
  FLOTILLA_ENFORCE(len >= longest, ctx.Where(), ": padded_length ", len,
                   " is shorter than the longest sequence (", longest, " steps)");
  return len;
}

void PadKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const LoDLevel& off = SequenceOffsets(x, ctx.Where());
  const Tensor& pad = ctx.Input("PadValue");
  const int64_t w = RowWidth(x), seqs = NumSequences(off), len = PaddedLength(ctx, off);
  FLOTILLA_ENFORCE(pad.dtype() == x.dtype() && (pad.numel() == 1 || pad.numel() == w), ctx.Where(),
                   ": PadValue must be ", DTypeName(x.dtype()), " with 1 or ", w,
                   " elements (a scalar or one row), got ", DTypeName(pad.dtype()), " of shape ",
                   DimsToString(pad.dims()));
  Tensor* out = ctx.Output("Out");
  out->Resize(PaddedDims(x.dims(), seqs, len));
  VisitDType(x.dtype(), [&]<typename T>() {
    const T* src = x.data<T>();
    const T* pv = pad.data<T>();
    T* dst = out->mutable_data<T>();
    for (int64_t s = 0; s < seqs; ++s) {
      const int64_t n = off[s + 1] - off[s];
      std::copy(src + off[s] * w, src + off[s + 1] * w, dst + s * len * w);
      for (int64_t r = n; r < len; ++r) {
        T* row = dst + (s * len + r) * w;
        for (int64_t j = 0; j < w; ++j) row[j] = pv[pad.numel() == 1 ? 0 : j];
      }
    }
  });
  out->set_lod({});
  Tensor* length = ctx.Output("Length");
  length->Resize({seqs});
  int64_t* l = length->mutable_data<int64_t>();
  for (int64_t s = 0; s < seqs; ++s) l[s] = off[s + 1] - off[s];
}

// Sequence s's packed rows [off[s], off[s+1]) → the first rows of block s of
// a padded [S, L, w] batch (to_padded), or back.
void MoveRows(const LoDLevel& off, int64_t len, size_t row_bytes, const char* from, char* to, bool to_padded) {
  for (int64_t s = 0; s < NumSequences(off); ++s) {
    const size_t block = static_cast<size_t>(s * len) * row_bytes;
    const size_t rows = static_cast<size_t>(off[s]) * row_bytes;
    const size_t bytes = static_cast<size_t>(off[s + 1] - off[s]) * row_bytes;
    if (bytes == 0) continue;
    std::memcpy(to + (to_padded ? block : rows), from + (to_padded ? rows : block), bytes);
  }
}

void PadGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const LoDLevel& off = SequenceOffsets(x, ctx.Where());
  const Tensor& g = ctx.Input("Out@GRAD");
  const int64_t w = RowWidth(x), seqs = NumSequences(off);
  FLOTILLA_ENFORCE(g.rank() >= 2 && g.dim(0) == seqs && g.numel() == seqs * g.dim(1) * w, ctx.Where(),
                   ": Out@GRAD has shape ", DimsToString(g.dims()), " for ", seqs, " sequences of width ", w);
  Tensor* dx = ctx.Output("X@GRAD");
  dx->Resize(x.dims());
  MoveRows(off, g.dim(1), static_cast<size_t>(w) * SizeOf(g.dtype()), static_cast<const char*>(g.raw_data()),
           static_cast<char*>(dx->raw_mutable_data(g.dtype())), false);
  dx->ShareLoD(x);
}

// ---- sequence_unpad ----

void UnpadShape(InferShapeContext& ctx) {
  const Dims x = ctx.InputDim("X");
  FLOTILLA_ENFORCE(x.size() >= 2, ctx.Where(), ": X must be [sequences, length, ...], got ",
                   DimsToString(x));
  Dims out{-1};
  out.insert(out.end(), x.begin() + 2, x.end());
  ctx.SetOutputDim("Out", out);
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
  ctx.SetOutputLoDLevel("Out", 1);
}

// Offsets of the sequences Length describes, checked against X [S, L, ...].
LoDLevel UnpadOffsets(const ExecutionContext& ctx, const Tensor& x) {
  const Tensor& length = ctx.Input("Length");
  FLOTILLA_ENFORCE(x.rank() >= 2, ctx.Where(), ": X must be [sequences, length, ...], got ",
                   DimsToString(x.dims()));
  FLOTILLA_ENFORCE(length.dtype() == DType::kInt64 && length.numel() == x.dim(0), ctx.Where(),
                   ": Length must be int64 with one entry per sequence (", x.dim(0), "), got ",
                   DTypeName(length.dtype()), " of shape ", DimsToString(length.dims()));
  LoDLevel off{0};
  const int64_t* l = length.data<int64_t>();
  for (int64_t s = 0; s < length.numel(); ++s) {
    FLOTILLA_ENFORCE(l[s] >= 0 && l[s] <= x.dim(1), ctx.Where(), ": Length[", s, "] = ", l[s],
                     " is outside [0, ", x.dim(1), "]");
    off.push_back(off.back() + l[s]);
  }
  return off;
}

Dims UnpaddedDims(const Dims& x, int64_t rows) {
  Dims out{rows};
  out.insert(out.end(), x.begin() + 2, x.end());
  return out;
}

void UnpadKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  LoDLevel off = UnpadOffsets(ctx, x);
  const int64_t w = Product(x.dims(), 2, x.dims().size());
  Tensor* out = ctx.Output("Out");
  out->Resize(UnpaddedDims(x.dims(), off.back()));
  MoveRows(off, x.dim(1), static_cast<size_t>(w) * SizeOf(x.dtype()), static_cast<const char*>(x.raw_data()),
           static_cast<char*>(out->raw_mutable_data(x.dtype())), false);
  out->set_lod({std::move(off)});
}

void UnpadGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const LoDLevel off = UnpadOffsets(ctx, x);
  const Tensor& g = ctx.Input("Out@GRAD");
  const int64_t w = Product(x.dims(), 2, x.dims().size());
  FLOTILLA_ENFORCE(g.numel() == off.back() * w, ctx.Where(), ": Out@GRAD has shape ",
                   DimsToString(g.dims()), " for ", off.back(), " rows of width ", w);
  Tensor* dx = ctx.Output("X@GRAD");
  dx->Resize(x.dims());
  dx->set_dtype(g.dtype());
  dx->SetZero();
  MoveRows(off, x.dim(1), static_cast<size_t>(w) * SizeOf(g.dtype()), static_cast<const char*>(g.raw_data()),
           static_cast<char*>(dx->raw_data()), true);
}

// ---- sequence_mask: Y[..., j] = j < X[...], Y = X's shape + [maxlen] ----

void MaskShape(InferShapeContext& ctx) {
  Dims y = ctx.InputDim("X");
  const int64_t maxlen = ctx.Attr<int32_t>("maxlen");
  y.push_back(maxlen < 0 || ctx.HasInput("MaxLenTensor") ? -1 : maxlen);
  ctx.SetOutputDim("Y", y);
  ctx.SetOutputDType("Y", static_cast<DType>(ctx.Attr<int32_t>("out_dtype")));
}

std::vector<int64_t> IntValues(const Tensor& t, const std::string& where, const std::string& slot) {
  FLOTILLA_ENFORCE(t.dtype() == DType::kInt64 || t.dtype() == DType::kInt32, where, ": ", slot,
                   " must hold int32 or int64 lengths, got ", DTypeName(t.dtype()));
  return VisitDType(t.dtype(), [&]<typename T>() {
    const T* p = t.data<T>();
    return std::vector<int64_t>(p, p + t.numel());
  });
}

void MaskKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const std::vector<int64_t> lengths = IntValues(x, ctx.Where(), "X");
  int64_t maxlen = ctx.Attr<int32_t>("maxlen");
  if (ctx.HasInput("MaxLenTensor")) maxlen = IntValues(ctx.Input("MaxLenTensor"), ctx.Where(), "MaxLenTensor").at(0);
  if (maxlen < 0) maxlen = lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
  Dims dims = x.dims();
  dims.push_back(maxlen);
  Tensor* y = ctx.Output("Y");
  y->Resize(dims);
  VisitDType(static_cast<DType>(ctx.Attr<int32_t>("out_dtype")), [&]<typename T>() {
    T* out = y->mutable_data<T>();
    for (size_t i = 0; i < lengths.size(); ++i) {
      for (int64_t j = 0; j < maxlen; ++j) out[static_cast<int64_t>(i) * maxlen + j] = j < lengths[i] ? T(1) : T(0);
    }
  });
}

// ---- sequence_enumerate: Out[r, k] = X[r + k] within r's sequence, else pad_value ----

void EnumerateShape(InferShapeContext& ctx) {
  const int64_t win = ctx.Attr<int32_t>("win_size");
  FLOTILLA_ENFORCE(win >= 1, ctx.Where(), ": win_size must be >= 1, got ", win);
  ctx.SetOutputDim("Out", {ctx.InputDim("X")[0], win});
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
  ctx.SetOutputLoDLevel("Out", ctx.InputLoDLevel("X"));
}

void EnumerateKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const LoDLevel& off = SequenceOffsets(x, ctx.Where());
  FLOTILLA_ENFORCE(RowWidth(x) == 1, ctx.Where(), ": X must hold one id per row ([N, 1]), got ",
                   DimsToString(x.dims()));
  const int64_t win = ctx.Attr<int32_t>("win_size");
  FLOTILLA_ENFORCE(win >= 1, ctx.Where(), ": win_size must be >= 1, got ", win);
  Tensor* out = ctx.Output("Out");
  out->Resize({x.dim(0), win});
  FLOTILLA_ENFORCE(x.dtype() == DType::kInt64 || x.dtype() == DType::kInt32, ctx.Where(),
                   ": X must hold int32 or int64 ids, got ", DTypeName(x.dtype()));
  VisitDType(x.dtype(), [&]<typename T>() {
    const T* in = x.data<T>();
    T* o = out->mutable_data<T>();
    const T pad = static_cast<T>(ctx.Attr<int32_t>("pad_value"));
    for (int64_t s = 0; s < NumSequences(off); ++s) {
      for (int64_t r = off[s]; r < off[s + 1]; ++r) {
        for (int64_t k = 0; k < win; ++k) o[r * win + k] = r + k < off[s + 1] ? in[r + k] : pad;
      }
    }
  });
  out->ShareLoD(x);
}

}  // namespace

void RegisterSequencePadOps() {
  auto& r = OpRegistry::Global();
  r.RegisterWithGrad({.type = "sequence_pad",
                      .infer_shape = PadShape,
                      .kernels = {{Place::Kind::kCPU, PadKernel}},
                      .default_attrs = {{"padded_length", int32_t{-1}}},
                      .no_grad_inputs = {"PadValue"}},
                     SequenceGrad({"X"}), PadGradKernel);
  r.RegisterWithGrad({.type = "sequence_unpad",
                      .infer_shape = UnpadShape,
                      .kernels = {{Place::Kind::kCPU, UnpadKernel}},
                      .no_grad_inputs = {"Length"}},
                     SequenceGrad({"X", "Length"}), UnpadGradKernel);
  r.Register({.type = "sequence_mask",
              .infer_shape = MaskShape,
              .kernels = {{Place::Kind::kCPU, MaskKernel}},
              .default_attrs = {{"maxlen", int32_t{-1}}, {"out_dtype", static_cast<int32_t>(DType::kInt64)}}});
  r.Register({.type = "sequence_enumerate",
              .infer_shape = EnumerateShape,
              .kernels = {{Place::Kind::kCPU, EnumerateKernel}},
              .default_attrs = {{"win_size", int32_t{2}}, {"pad_value", int32_t{0}}}});
}

}  // namespace flotilla::ops
