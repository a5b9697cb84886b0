// pool2d on NCHW tensors with Paddle's attributes: pooling_type (max, avg),
// ksize, strides, paddings, global_pooling (the window is the whole map),
// ceil_mode, exclusive (avg divides by the window's cells inside the input,
// else by kh * kw) and adaptive (ksize is the output size; bin i covers
// [floor(i * H / Ho), ceil((i + 1) * H / Ho)) — Paddle's adaptive_pool2d).
//
// Max pooling sends each output's gradient to the first cell holding the
// maximum (the order PyTorch and Paddle use), recomputed from X and Out in
// the gradient op rather than stored by the forward.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "framework/ops/spatial_util.h"

namespace flotilla::ops {
namespace {

struct PoolGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0, out_h = 0, out_w = 0;
  Window win;
  std::array<int64_t, 2> k{1, 1};
  bool max = true, adaptive = false, exclusive = true;
};

template <typename Ctx>
PoolGeometry MakePoolGeometry(const Ctx& ctx, const Dims& x) {
  CheckRank4(ctx, "X", x, "[N, C, H, W]");
  PoolGeometry g;
  g.n = x[0], g.c = x[1], g.h = x[2], g.w = x[3];
  const std::string type = ctx.template Attr<std::string>("pooling_type");
  FLOTILLA_ENFORCE(type == "max" || type == "avg", ctx.Where(),
                   ": attribute pooling_type must be max or avg, got '", type, "'");
  g.max = type == "max";
  g.exclusive = ctx.template Attr<bool>("exclusive");
  g.adaptive = ctx.template Attr<bool>("adaptive");
  g.k = PairAttr(ctx, "ksize", 1);
  if (ctx.template Attr<bool>("global_pooling")) {
    g.adaptive = true;  // one bin covering the whole map
    g.k = {1, 1};
  }
  if (g.adaptive) {
    FLOTILLA_ENFORCE(g.k[0] >= 1 && g.k[1] >= 1, ctx.Where(),
                     ": adaptive pooling needs a positive output size (ksize), got [", g.k[0],
                     ", ", g.k[1], "]");
    g.out_h = g.k[0], g.out_w = g.k[1];
    return g;
  }
  g.win = ResolveWindow(ctx, {g.h, g.w}, g.k, ctx.template Attr<bool>("ceil_mode"));
  g.out_h = g.win.out[0], g.out_w = g.win.out[1];
  return g;
}

// The input cells [begin, end) of output index o along dimension d, and
// the avg divisor's share of that dimension.
struct Span {
  int64_t begin, end, count;
};

Span WindowSpan(const PoolGeometry& g, int d, int64_t o) {
  const int64_t in = d == 0 ? g.h : g.w, out = d == 0 ? g.out_h : g.out_w;
  if (g.adaptive) {
    const int64_t b = o * in / out, e = ((o + 1) * in + out - 1) / out;
    return {b, e, e - b};
  }
  const int64_t b = o * g.win.stride[d] - g.win.pad_begin[d];
  const int64_t e = std::min(b + g.k[d], in);
  const int64_t cb = std::max<int64_t>(b, 0);
  return {cb, e, g.exclusive ? e - cb : g.k[d]};
}

void PoolInferShape(InferShapeContext& ctx) {
  PoolGeometry g = MakePoolGeometry(ctx, ctx.InputDim("X"));
  ctx.SetOutputDim("Out", {g.n, g.c, g.out_h, g.out_w});
  ctx.SetOutputDType("Out", ctx.InputDType("X"));
}

std::vector<Span> Spans(const PoolGeometry& g, int d) {
  std::vector<Span> spans;
  for (int64_t o = 0; o < (d == 0 ? g.out_h : g.out_w); ++o) spans.push_back(WindowSpan(g, d, o));
  return spans;
}

template <typename T>
void PoolForward(const PoolGeometry& g, const T* x, T* out) {
  const std::vector<Span> hs = Spans(g, 0), ws = Spans(g, 1);
  for (int64_t nc = 0; nc < g.n * g.c; ++nc) {
    const T* xp = x + nc * g.h * g.w;
    T* op = out + nc * g.out_h * g.out_w;
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      const Span& sh = hs[oh];
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const Span& sw = ws[ow];
        T acc = g.max ? -std::numeric_limits<T>::infinity() : T(0);
        for (int64_t ih = sh.begin; ih < sh.end; ++ih) {
          const T* row = xp + ih * g.w;
          for (int64_t iw = sw.begin; iw < sw.end; ++iw) acc = g.max ? std::max(acc, row[iw]) : acc + row[iw];
        }
        op[oh * g.out_w + ow] = g.max ? acc : acc / T(std::max<int64_t>(1, sh.count * sw.count));
      }
    }
  }
}

template <typename T>
void PoolBackward(const PoolGeometry& g, const T* x, const T* out, const T* dout, T* dx) {
  std::fill(dx, dx + g.n * g.c * g.h * g.w, T(0));
  const std::vector<Span> hs = Spans(g, 0), ws = Spans(g, 1);
  for (int64_t nc = 0; nc < g.n * g.c; ++nc) {
    const T* xp = x + nc * g.h * g.w;
    T* dp = dx + nc * g.h * g.w;
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      const Span& sh = hs[oh];
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const Span& sw = ws[ow];
        const int64_t o = (nc * g.out_h + oh) * g.out_w + ow;
        if (g.max) {
          for (int64_t ih = sh.begin; ih < sh.end; ++ih) {
            for (int64_t iw = sw.begin; iw < sw.end; ++iw) {
              if (xp[ih * g.w + iw] == out[o]) {
                dp[ih * g.w + iw] += dout[o];
                ih = sh.end;  // first maximum only
                break;
              }
            }
          }
          continue;
        }
        const T share = dout[o] / T(std::max<int64_t>(1, sh.count * sw.count));
        for (int64_t ih = sh.begin; ih < sh.end; ++ih) {
          for (int64_t iw = sw.begin; iw < sw.end; ++iw) dp[ih * g.w + iw] += share;
        }
      }
    }
  }
}

void PoolKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  PoolGeometry g = MakePoolGeometry(ctx, x.dims());
  Tensor* out = ctx.Output("Out");
  out->Resize({g.n, g.c, g.out_h, g.out_w});
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    PoolForward(g, x.data<T>(), out->mutable_data<T>());
  });
}

void PoolGradKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& out = ctx.Input("Out");
  const Tensor& dout = ctx.Input(GradVarName("Out"));
  PoolGeometry g = MakePoolGeometry(ctx, x.dims());
  CheckGradShape(ctx, dout, {g.n, g.c, g.out_h, g.out_w}, "Out");
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    if (T* dx = GradOutput<T>(ctx, "X", x.dims())) {
      PoolBackward(g, x.data<T>(), out.data<T>(), dout.data<T>(), dx);
    }
  });
}

}  // namespace

void RegisterPoolOps() {
  auto& r = OpRegistry::Global();
  r.RegisterWithGrad({.type = "pool2d",
                      .infer_shape = PoolInferShape,
                      .kernels = {{Place::Kind::kCPU, PoolKernel}},
                      .default_attrs = {{"pooling_type", std::string("max")},
                                        {"ksize", std::vector<int32_t>{1, 1}},
                                        {"global_pooling", false},
                                        {"strides", std::vector<int32_t>{1, 1}},
                                        {"paddings", std::vector<int32_t>{0, 0}},
                                        {"exclusive", true},
                                        {"adaptive", false},
                                        {"ceil_mode", false},
                                        {"padding_algorithm", std::string("EXPLICIT")},
                                        {"data_format", std::string("NCHW")}}},
                     {.forward_inputs = {"X"}, .forward_outputs = {"Out"}, .output_grads = {"Out"},
                      .input_grads = {"X"}},
                     PoolGradKernel);
}

}  // namespace flotilla::ops
