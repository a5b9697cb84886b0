// Shape helpers shared by the NCHW ops (conv, pool, norm, layout): rank
// checks with messages naming the op, the slot and the expected layout, and
// the sliding-window arithmetic of strides, paddings, dilations,
// padding_algorithm and ceil_mode. Work on InferShapeContext (unknown sizes
// are -1 and stay -1) and ExecutionContext alike.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/shape_checks.h"

namespace flotilla::ops {

template <typename Ctx>
void CheckRank4(const Ctx& ctx, const std::string& slot, const Dims& dims, const char* layout) {
  FLOTILLA_ENFORCE(dims.size() == 4, ctx.Where(), ": ", DescribeInput(ctx, slot, dims),
                   " must have rank 4, expected shape ", layout);
}

// Throws unless the upstream gradient of `slot` has the forward's shape.
template <typename Ctx>
void CheckGradShape(const Ctx& ctx, const Tensor& grad, const Dims& expected, const std::string& slot) {
  FLOTILLA_ENFORCE(grad.dims() == expected, ctx.Where(), ": ", slot, "@GRAD has shape ",
                   DimsToString(grad.dims()), ", expected ", DimsToString(expected));
}

// The gradient output "<slot>@GRAD" resized to `dims`, or nullptr when the
// program does not want it.
template <typename T>
T* GradOutput(ExecutionContext& ctx, const std::string& slot, const Dims& dims) {
  if (!ctx.HasOutput(GradVarName(slot))) return nullptr;
  Tensor* t = ctx.Output(GradVarName(slot));
  t->Resize(dims);
  return t->mutable_data<T>();
}

// One sliding window over H and W.
struct Window {
  std::array<int64_t, 2> stride{1, 1}, dilation{1, 1};
  std::array<int64_t, 2> pad_begin{0, 0}, pad_end{0, 0};
  std::array<int64_t, 2> out{-1, -1};
};
using TransposedWindow = Window;

template <typename Ctx>
std::array<int64_t, 2> PairAttr(const Ctx& ctx, const std::string& name, int64_t fallback) {
  const auto& op = ctx.op();
  if (!op.HasAttr(name)) return {fallback, fallback};
  auto v = op.template Attr<std::vector<int32_t>>(name);
  if (v.empty()) return {fallback, fallback};
  if (v.size() == 1) return {v[0], v[0]};
  FLOTILLA_ENFORCE(v.size() == 2, ctx.Where(), ": attribute ", name,
                   " must hold 1 or 2 values (H, W), got ", v.size());
  return {v[0], v[1]};
}

// paddings: [ph, pw] or [top, bottom, left, right].
template <typename Ctx>
void ReadPaddings(const Ctx& ctx, Window* w) {
  auto p = ctx.op().template AttrOr<std::vector<int32_t>>("paddings", {0, 0});
  if (p.size() == 2) {
    w->pad_begin = {p[0], p[1]};
    w->pad_end = {p[0], p[1]};
  } else {
    FLOTILLA_ENFORCE(p.size() == 4, ctx.Where(),
                     ": attribute paddings must be [ph, pw] or [top, bottom, left, right], got ",
                     p.size(), " values");
    w->pad_begin = {p[0], p[2]};
    w->pad_end = {p[1], p[3]};
  }
  for (int i = 0; i < 2; ++i) {
    FLOTILLA_ENFORCE(w->pad_begin[i] >= 0 && w->pad_end[i] >= 0, ctx.Where(),
                     ": attribute paddings must not be negative");
  }
}

template <typename Ctx>
Window ReadWindow(const Ctx& ctx) {
  Window w;
  w.stride = PairAttr(ctx, "strides", 1);
  w.dilation = PairAttr(ctx, "dilations", 1);
  ReadPaddings(ctx, &w);
  for (int i = 0; i < 2; ++i) {
    FLOTILLA_ENFORCE(w.stride[i] >= 1 && w.dilation[i] >= 1, ctx.Where(),
                     ": attributes strides and dilations must be >= 1");
  }
  return w;
}

template <typename Ctx>
std::string PaddingAlgorithm(const Ctx& ctx) {
  std::string a = ctx.op().template AttrOr<std::string>("padding_algorithm", "EXPLICIT");
  FLOTILLA_ENFORCE(a == "EXPLICIT" || a == "SAME" || a == "VALID", ctx.Where(),
                   ": attribute padding_algorithm must be EXPLICIT, SAME or VALID, got '", a, "'");
  return a;
}

// Output sizes of a window of size `k` over `in` (H, W).
template <typename Ctx>
Window ResolveWindow(const Ctx& ctx, std::array<int64_t, 2> in, std::array<int64_t, 2> k,
                     bool ceil_mode = false) {
  Window w = ReadWindow(ctx);
  const std::string algo = PaddingAlgorithm(ctx);
  for (int i = 0; i < 2; ++i) {
    FLOTILLA_ENFORCE(k[i] >= 1, ctx.Where(), ": window size must be >= 1, got ", k[i]);
    const int64_t eff = w.dilation[i] * (k[i] - 1) + 1, s = w.stride[i];
    if (algo == "VALID") w.pad_begin[i] = w.pad_end[i] = 0;
    if (in[i] < 0) continue;  // unknown until run time
    if (algo == "SAME") {
      w.out[i] = (in[i] + s - 1) / s;
      const int64_t total = std::max<int64_t>((w.out[i] - 1) * s + eff - in[i], 0);
      w.pad_begin[i] = total / 2;
      w.pad_end[i] = total - total / 2;
      continue;
    }
    const int64_t span = in[i] + w.pad_begin[i] + w.pad_end[i] - eff;
    FLOTILLA_ENFORCE(span >= 0, ctx.Where(), ": the input's ", i == 0 ? "height" : "width", " ",
                     in[i], " plus paddings ", w.pad_begin[i], "+", w.pad_end[i],
                     " is smaller than the window (", eff,
                     " with dilation); expected an input of at least that size");
    w.out[i] = (ceil_mode ? span + s - 1 : span) / s + 1;
    // A last window that would start in the end padding is dropped.
    if (ceil_mode && (w.out[i] - 1) * s >= in[i] + w.pad_begin[i]) --w.out[i];
  }
  return w;
}

// conv2d_transpose: out = (in - 1) * stride - pads + dilated k + output_padding,
// or attribute output_size when given (within [that, that + stride)).
template <typename Ctx>
Window ResolveTransposedWindow(const Ctx& ctx, std::array<int64_t, 2> in, std::array<int64_t, 2> k) {
  Window w = ReadWindow(ctx);
  const std::string algo = PaddingAlgorithm(ctx);
  auto extra = PairAttr(ctx, "output_padding", 0);
  auto size = ctx.op().template AttrOr<std::vector<int32_t>>("output_size", {});
  for (int i = 0; i < 2; ++i) {
    const int64_t eff = w.dilation[i] * (k[i] - 1) + 1, s = w.stride[i];
    if (algo == "VALID") w.pad_begin[i] = w.pad_end[i] = 0;
    if (in[i] < 0) continue;
    if (algo == "SAME") {
      w.out[i] = in[i] * s;
      const int64_t total = std::max<int64_t>((in[i] - 1) * s + eff - w.out[i], 0);
      w.pad_begin[i] = total / 2;
      w.pad_end[i] = total - total / 2;
      continue;
    }
    w.out[i] = (in[i] - 1) * s - w.pad_begin[i] - w.pad_end[i] + eff;
    if (!size.empty()) {
      const int64_t want = size.size() == 2 ? size[i] : size[0];
      FLOTILLA_ENFORCE(want >= w.out[i] && want < w.out[i] + s, ctx.Where(),
                       ": attribute output_size ", want, " must lie in [", w.out[i], ", ",
                       w.out[i] + s, ") for this input, stride and padding");
      w.out[i] = want;
    } else {
      FLOTILLA_ENFORCE(extra[i] >= 0 && extra[i] < std::max(s, w.dilation[i]), ctx.Where(),
                       ": attribute output_padding must be in [0, max(stride, dilation))");
      w.out[i] += extra[i];
    }
    FLOTILLA_ENFORCE(w.out[i] > 0, ctx.Where(), ": output size ", w.out[i],
                     " is not positive; reduce paddings");
  }
  return w;
}

}  // namespace flotilla::ops
