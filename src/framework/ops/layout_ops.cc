// Layout ops around convolutional networks (Paddle's slots and attributes):
//   flatten / flatten2(X) -> Out [prod(dims[:axis]), prod(dims[axis:])]
//   transpose / transpose2(X) -> Out with dims permuted by attribute axis
//   pad2d(X [N, C, H, W]) -> Out, paddings [top, bottom, left, right],
//     mode constant (pad_value), reflect or edge
//   nearest_interp / bilinear_interp(X [N, C, H, W]) -> Out [N, C, out_h, out_w]
//     (out_h/out_w, or scale), align_corners, align_mode (0: half-pixel
//     centres, 1: src = dst * in / out); Paddle's image_resize.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/grad_registration.h"
#include "framework/ops/ops.h"
#include "framework/ops/shape_checks.h"
#include "framework/ops/spatial_util.h"

namespace flotilla::ops {
namespace {

// ---- flatten ----

template <typename Ctx>
Dims FlattenDims(const Ctx& ctx, const Dims& x) {
  const int axis = ctx.template Attr<int32_t>("axis");
  FLOTILLA_ENFORCE(axis >= 0 && axis <= static_cast<int>(x.size()), ctx.Where(),
                   ": attribute axis (", axis, ") must be in [0, ", x.size(), "] for ",
                   DescribeInput(ctx, "X", x));
  return {Product(x, 0, axis), Product(x, axis, x.size())};
}

void FlattenInferShape(InferShapeContext& ctx) {
  ctx.SetOutputDim("Out", FlattenDims(ctx, ctx.InputDim("X")));
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
}

void FlattenKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  out->CopyFrom(x);
  out->Reshape(FlattenDims(ctx, x.dims()));
}

// Shared by flatten and the reshape-like grads: dX = dOut with X's dims.
void ReshapeBackKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& g = ctx.Input(GradVarName("Out"));
  FLOTILLA_ENFORCE(g.numel() == x.numel(), ctx.Where(), ": Out@GRAD has shape ",
                   DimsToString(g.dims()), " but X has ", DimsToString(x.dims()));
  if (!ctx.HasOutput(GradVarName("X"))) return;
  Tensor* dx = ctx.Output(GradVarName("X"));
  dx->CopyFrom(g);
  dx->Reshape(x.dims());
}

// ---- transpose ----

template <typename Ctx>
std::vector<int32_t> Perm(const Ctx& ctx, size_t rank) {
  auto axis = ctx.template Attr<std::vector<int32_t>>("axis");
  std::vector<bool> seen(rank, false);
  FLOTILLA_ENFORCE(axis.size() == rank, ctx.Where(), ": attribute axis has ", axis.size(),
                   " entries but X has rank ", rank);
  for (int32_t a : axis) {
    FLOTILLA_ENFORCE(a >= 0 && a < static_cast<int32_t>(rank) && !seen[a], ctx.Where(),
                     ": attribute axis must be a permutation of [0, ", rank, ")");
    seen[a] = true;
  }
  return axis;
}

void TransposeInferShape(InferShapeContext& ctx) {
  Dims x = ctx.InputDim("X"), out;
  for (int32_t a : Perm(ctx, x.size())) out.push_back(x[a]);
  ctx.SetOutputDim("Out", out);
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
}

// out[i] = x[permuted index]; `inverse` scatters instead (the gradient).
template <typename T>
void Permute(const Dims& x_dims, const std::vector<int32_t>& perm, const T* x, T* out, bool inverse) {
  const size_t rank = x_dims.size();
  std::vector<int64_t> stride(rank, 1);
  for (size_t i = rank; i-- > 1;) stride[i - 1] = stride[i] * x_dims[i];
  Dims out_dims(rank);
  for (size_t i = 0; i < rank; ++i) out_dims[i] = x_dims[perm[i]];
  std::vector<int64_t> idx(rank, 0);
  const int64_t n = Numel(x_dims);
  for (int64_t o = 0; o < n; ++o) {
    int64_t src = 0;
    for (size_t i = 0; i < rank; ++i) src += idx[i] * stride[perm[i]];
    if (inverse) {
      out[src] = x[o];
    } else {
      out[o] = x[src];
    }
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < out_dims[i]) break;
      idx[i] = 0;
    }
  }
}

void TransposeKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  auto perm = Perm(ctx, x.dims().size());
  Dims out_dims;
  for (int32_t a : perm) out_dims.push_back(x.dims()[a]);
  Tensor* out = ctx.Output("Out");
  out->Resize(out_dims);
  VisitDType(x.dtype(), [&]<typename T>() {
    Permute(x.dims(), perm, x.data<T>(), out->mutable_data<T>(), false);
  });
}

void TransposeGradKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& g = ctx.Input(GradVarName("Out"));
  auto perm = Perm(ctx, x.dims().size());
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    if (T* dx = GradOutput<T>(ctx, "X", x.dims())) Permute(x.dims(), perm, g.data<T>(), dx, true);
  });
}

// ---- pad2d ----

struct Pad2d {
  int64_t top, bottom, left, right;
  std::string mode;
  double value;
};

template <typename Ctx>
Pad2d ReadPad2d(const Ctx& ctx, const Dims& x) {
  CheckRank4(ctx, "X", x, "[N, C, H, W]");
  auto p = ctx.template Attr<std::vector<int32_t>>("paddings");
  FLOTILLA_ENFORCE(p.size() == 4, ctx.Where(),
                   ": attribute paddings must be [top, bottom, left, right], got ", p.size(), " values");
  Pad2d pad{p[0], p[1], p[2], p[3], ctx.template Attr<std::string>("mode"),
            ctx.template Attr<float>("pad_value")};
  FLOTILLA_ENFORCE(pad.mode == "constant" || pad.mode == "reflect" || pad.mode == "edge",
                   ctx.Where(), ": attribute mode must be constant, reflect or edge, got '", pad.mode, "'");
  FLOTILLA_ENFORCE(p[0] >= 0 && p[1] >= 0 && p[2] >= 0 && p[3] >= 0, ctx.Where(),
                   ": attribute paddings must not be negative");
  if (pad.mode == "reflect" && x[2] > 0 && x[3] > 0) {
    FLOTILLA_ENFORCE(std::max(p[0], p[1]) < x[2] && std::max(p[2], p[3]) < x[3], ctx.Where(),
                     ": reflect padding must be smaller than ", DescribeInput(ctx, "X", x));
  }
  return pad;
}

Dims PaddedDims(const Dims& x, const Pad2d& p) {
  return {x[0], x[1], x[2] < 0 ? -1 : x[2] + p.top + p.bottom, x[3] < 0 ? -1 : x[3] + p.left + p.right};
}

// Source index of padded coordinate i (in [-before, n + after)), or -1.
int64_t PadSource(int64_t i, int64_t n, const std::string& mode) {
  if (i >= 0 && i < n) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return std::clamp<int64_t>(i, 0, n - 1);
  return i < 0 ? -i : 2 * (n - 1) - i;  // reflect
}

void Pad2dInferShape(InferShapeContext& ctx) {
  Dims x = ctx.InputDim("X");
  ctx.SetOutputDim("Out", PaddedDims(x, ReadPad2d(ctx, x)));
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
}

template <typename T>
void Pad2dLoop(const Dims& x, const Pad2d& p, const T* in, T* out, bool backward) {
  const Dims o = PaddedDims(x, p);
  for (int64_t nc = 0; nc < x[0] * x[1]; ++nc) {
    for (int64_t h = 0; h < o[2]; ++h) {
      const int64_t sh = PadSource(h - p.top, x[2], p.mode);
      for (int64_t w = 0; w < o[3]; ++w) {
        const int64_t sw = PadSource(w - p.left, x[3], p.mode);
        const int64_t oi = (nc * o[2] + h) * o[3] + w;
        const int64_t si = (nc * x[2] + sh) * x[3] + sw;
        if (backward) {
          if (sh >= 0 && sw >= 0) out[si] += in[oi];
        } else {
          out[oi] = (sh >= 0 && sw >= 0) ? in[si] : T(p.value);
        }
      }
    }
  }
}

void Pad2dKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Pad2d p = ReadPad2d(ctx, x.dims());
  Tensor* out = ctx.Output("Out");
  out->Resize(PaddedDims(x.dims(), p));
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    Pad2dLoop(x.dims(), p, x.data<T>(), out->mutable_data<T>(), false);
  });
}

void Pad2dGradKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& g = ctx.Input(GradVarName("Out"));
  Pad2d p = ReadPad2d(ctx, x.dims());
  CheckGradShape(ctx, g, PaddedDims(x.dims(), p), "Out");
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    T* dx = GradOutput<T>(ctx, "X", x.dims());
    if (dx == nullptr) return;
    std::fill(dx, dx + x.numel(), T(0));
    Pad2dLoop(x.dims(), p, g.data<T>(), dx, true);
  });
}

// ---- nearest_interp, bilinear_interp ----

template <typename Ctx>
std::array<int64_t, 2> InterpSize(const Ctx& ctx, const Dims& x) {
  CheckRank4(ctx, "X", x, "[N, C, H, W]");
  int64_t h = ctx.template Attr<int32_t>("out_h"), w = ctx.template Attr<int32_t>("out_w");
  const float scale = ctx.template Attr<float>("scale");
  if (scale > 0 && x[2] > 0) h = static_cast<int64_t>(x[2] * scale), w = static_cast<int64_t>(x[3] * scale);
  FLOTILLA_ENFORCE(h > 0 && w > 0, ctx.Where(),
                   ": set attributes out_h and out_w (positive) or a positive scale");
  return {h, w};
}

// Source coordinate of output index d along a dimension of `in` -> `out`.
double SourceCoord(int64_t d, int64_t in, int64_t out, bool align_corners, int align_mode) {
  if (align_corners) return out > 1 ? double(d) * (in - 1) / (out - 1) : 0.0;
  const double ratio = double(in) / out;
  return align_mode == 0 ? std::max(0.0, (d + 0.5) * ratio - 0.5) : d * ratio;
}

// One output coordinate's two taps and weights along a dimension.
struct Taps {
  int64_t lo, hi;
  double w_hi;
};

Taps Interp(int64_t d, int64_t in, int64_t out, bool nearest, bool align_corners, int align_mode) {
  if (nearest) {
    const double s = align_corners ? std::round(SourceCoord(d, in, out, true, 1))
                                   : std::floor(double(d) * in / out);
    const int64_t i = std::min<int64_t>(static_cast<int64_t>(s), in - 1);
    return {i, i, 0.0};
  }
  const double s = SourceCoord(d, in, out, align_corners, align_mode);
  const int64_t lo = std::min<int64_t>(static_cast<int64_t>(s), in - 1);
  const int64_t hi = std::min<int64_t>(lo + 1, in - 1);
  return {lo, hi, s - double(lo)};
}

template <typename T>
void InterpLoop(const ExecutionContext& ctx, const Dims& x, std::array<int64_t, 2> o,
                const T* in, T* out, bool backward) {
  const bool nearest = ctx.op().type.rfind("nearest", 0) == 0;
  const bool ac = ctx.Attr<bool>("align_corners");
  const int mode = ctx.Attr<int32_t>("align_mode");
  std::vector<Taps> th, tw;
  for (int64_t h = 0; h < o[0]; ++h) th.push_back(Interp(h, x[2], o[0], nearest, ac, mode));
  for (int64_t w = 0; w < o[1]; ++w) tw.push_back(Interp(w, x[3], o[1], nearest, ac, mode));
  for (int64_t nc = 0; nc < x[0] * x[1]; ++nc) {
    const int64_t ib = nc * x[2] * x[3];
    for (int64_t h = 0; h < o[0]; ++h) {
      for (int64_t w = 0; w < o[1]; ++w) {
        const Taps& a = th[h];
        const Taps& b = tw[w];
        const int64_t idx[4] = {a.lo * x[3] + b.lo, a.lo * x[3] + b.hi, a.hi * x[3] + b.lo, a.hi * x[3] + b.hi};
        const double wt[4] = {(1 - a.w_hi) * (1 - b.w_hi), (1 - a.w_hi) * b.w_hi, a.w_hi * (1 - b.w_hi),
                              a.w_hi * b.w_hi};
        const int64_t oi = (nc * o[0] + h) * o[1] + w;
        if (backward) {
          for (int k = 0; k < 4; ++k) out[ib + idx[k]] += T(wt[k] * in[oi]);
        } else {
          double acc = 0;
          for (int k = 0; k < 4; ++k) acc += wt[k] * in[ib + idx[k]];
          out[oi] = T(acc);
        }
      }
    }
  }
}

void InterpInferShape(InferShapeContext& ctx) {
  Dims x = ctx.InputDim("X");
  auto o = InterpSize(ctx, x);
  ctx.SetOutputDim("Out", {x[0], x[1], o[0], o[1]});
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
}

void InterpKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  auto o = InterpSize(ctx, x.dims());
  Tensor* out = ctx.Output("Out");
  out->Resize({x.dims()[0], x.dims()[1], o[0], o[1]});
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    InterpLoop(ctx, x.dims(), o, x.data<T>(), out->mutable_data<T>(), false);
  });
}

void InterpGradKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& g = ctx.Input(GradVarName("Out"));
  auto o = InterpSize(ctx, x.dims());
  CheckGradShape(ctx, g, {x.dims()[0], x.dims()[1], o[0], o[1]}, "Out");
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    T* dx = GradOutput<T>(ctx, "X", x.dims());
    if (dx == nullptr) return;
    std::fill(dx, dx + x.numel(), T(0));
    InterpLoop(ctx, x.dims(), o, g.data<T>(), dx, true);
  });
}

// Every layout op: X in, Out out.
const GradSlots kLayoutGrad = {.forward_inputs = {"X"}, .output_grads = {"Out"}, .input_grads = {"X"}};

}  // namespace

void RegisterLayoutOps() {
  auto& r = OpRegistry::Global();
  for (const char* type : {"flatten", "flatten2"}) {
    RegisterKernelWithGrad(r, type, FlattenInferShape, FlattenKernel, {{"axis", int32_t{1}}}, kLayoutGrad,
                           ReshapeBackKernel);
  }
  for (const char* type : {"transpose", "transpose2"}) {
    RegisterKernelWithGrad(r, type, TransposeInferShape, TransposeKernel, {}, kLayoutGrad, TransposeGradKernel);
  }
  RegisterKernelWithGrad(r, "pad2d", Pad2dInferShape, Pad2dKernel,
                         {{"paddings", std::vector<int32_t>{0, 0, 0, 0}},
                          {"mode", std::string("constant")},
                          {"pad_value", 0.0f},
                          {"data_format", std::string("NCHW")}},
                         kLayoutGrad, Pad2dGradKernel);
  for (const char* type : {"nearest_interp", "bilinear_interp"}) {
    RegisterKernelWithGrad(r, type, InterpInferShape, InterpKernel,
                           {{"out_h", int32_t{-1}},
                            {"out_w", int32_t{-1}},
                            {"scale", 0.0f},
                            {"align_corners", true},
                            {"align_mode", int32_t{1}},
                            {"interp_method", std::string("bilinear")},
                            {"data_layout", std::string("NCHW")}},
                           kLayoutGrad, InterpGradKernel);
  }
}

}  // namespace flotilla::ops
