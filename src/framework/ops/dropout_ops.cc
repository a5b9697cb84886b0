// dropout(X) -> Out, Mask, with Paddle's attributes: dropout_prob,
// is_test, fix_seed, seed and dropout_implementation:
//   downgrade_in_infer (default): train Out = X * mask; test Out = X * (1 - p)
//   upscale_in_train:             train Out = X * mask / (1 - p); test Out = X
// Mask holds 1 where a unit is kept, 0 where it is dropped (X's dtype).
// Program::Clone(for_test) sets is_test, turning dropout off.
//
// Seeds: without fix_seed every run draws fresh masks from a process-wide
// generator. With fix_seed the mask comes from `seed` mixed with the op's
// output name and the rank (PADDLE_TRAINER_ID), so it is reproducible yet
// differs between data-parallel ranks — identical masks on every rank would
// silently correlate their gradients. Like Paddle's, a fixed seed gives the
// same mask on every run.
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "flotilla/common/env.h"
#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "framework/ops/spatial_util.h"

namespace flotilla::ops {
namespace {

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

std::mt19937_64 DropoutEngine(const ExecutionContext& ctx) {
  if (ctx.Attr<bool>("fix_seed")) {
    uint64_t h = Mix(0, static_cast<uint64_t>(ctx.Attr<int32_t>("seed")));
    for (unsigned char c : ctx.OutputName("Out")) h = Mix(h, c);
    h = Mix(h, static_cast<uint64_t>(env::GetInt("PADDLE_TRAINER_ID", 0)));
    return std::mt19937_64(h);
  }
  static std::mutex mu;
  static std::mt19937_64 process_engine{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mu);
  return std::mt19937_64(process_engine());
}

bool Upscale(const ExecutionContext& ctx) {
  const std::string impl = ctx.Attr<std::string>("dropout_implementation");
  FLOTILLA_ENFORCE(impl == "downgrade_in_infer" || impl == "upscale_in_train", ctx.Where(),
                   ": attribute dropout_implementation must be downgrade_in_infer or "
                   "upscale_in_train, got '", impl, "'");
  return impl == "upscale_in_train";
}

void DropoutKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const double p = ctx.Attr<float>("dropout_prob");
  FLOTILLA_ENFORCE(p >= 0 && p <= 1, ctx.Where(), ": attribute dropout_prob must be in [0, 1], got ", p);
  const bool upscale = Upscale(ctx);
  Tensor* out = ctx.Output("Out");
  out->Resize(x.dims());
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    const T* xp = x.data<T>();
    T* op = out->mutable_data<T>();
    const int64_t n = x.numel();
    if (ctx.Attr<bool>("is_test")) {
      const T s = upscale ? T(1) : T(1 - p);
      for (int64_t i = 0; i < n; ++i) op[i] = xp[i] * s;
      return;
    }
    Tensor* mask = ctx.Output("Mask");
    mask->Resize(x.dims());
    T* mp = mask->mutable_data<T>();
    std::mt19937_64 engine = DropoutEngine(ctx);
    // keep when a uniform 53-bit draw is >= p
    const uint64_t threshold = static_cast<uint64_t>(p * 9007199254740992.0);
    for (int64_t i = 0; i < n; ++i) mp[i] = (engine() >> 11) >= threshold ? T(1) : T(0);
    const T s = upscale ? (p < 1 ? T(1 / (1 - p)) : T(0)) : T(1);
    for (int64_t i = 0; i < n; ++i) op[i] = xp[i] * mp[i] * s;
  });
}

void DropoutGradKernel(ExecutionContext& ctx) {
  const Tensor& mask = ctx.Input("Mask");
  const Tensor& g = ctx.Input(GradVarName("Out"));
  CheckGradShape(ctx, g, mask.dims(), "Out");
  const double p = ctx.Attr<float>("dropout_prob");
  VisitFloatDType(g.dtype(), ctx.Where(), [&]<typename T>() {
    T* dx = GradOutput<T>(ctx, "X", g.dims());
    if (dx == nullptr) return;
    const T s = Upscale(ctx) ? (p < 1 ? T(1 / (1 - p)) : T(0)) : T(1);
    const T* gp = g.data<T>();
    const T* mp = mask.data<T>();
    for (int64_t i = 0; i < g.numel(); ++i) dx[i] = gp[i] * mp[i] * s;
  });
}

void DropoutInferShape(InferShapeContext& ctx) {
  ctx.ShareDim("X", "Out");
  if (ctx.HasOutput("Mask")) ctx.ShareDim("X", "Mask");
}

}  // namespace

void RegisterDropoutOps() {
  auto& r = OpRegistry::Global();
  r.Register({.type = "dropout",
              .infer_shape = DropoutInferShape,
              .kernels = {{Place::Kind::kCPU, DropoutKernel}},
              .grad_maker = [](const OpDesc& fwd) -> std::vector<OpDesc> {
                return GradOpBuilder(fwd, "dropout_grad").ForwardOutputs({"Mask"})
                    .OutputGrads({"Out"}).InputGrads({"X"});
              },
              .default_attrs = {{"dropout_prob", 0.5f},
                                {"is_test", false},
                                {"fix_seed", false},
                                {"seed", int32_t{0}},
                                {"dropout_implementation", std::string("downgrade_in_infer")}},
              .share_lod = {{"X", "Out"}}});
  r.Register({.type = "dropout_grad",
              .infer_shape = [](InferShapeContext& ctx) { ctx.ShareDim("Mask", GradVarName("X")); },
              .kernels = {{Place::Kind::kCPU, DropoutGradKernel}}});
}

}  // namespace flotilla::ops
