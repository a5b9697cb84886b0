// Label transforms for classification training (Paddle's slots):
//   one_hot(X int64 [N, 1] or [N]) -> Out float32 [N, depth]; not
//     differentiable; an id outside [0, depth) is an error naming it.
//   label_smooth(X [.., C], PriorDist? [1, C]) -> Out = (1 - epsilon) X +
//     epsilon * PriorDist (uniform 1/C without it); dX = (1 - epsilon) dOut.
#include <string>
#include <vector>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "framework/ops/shape_checks.h"
#include "framework/ops/spatial_util.h"

namespace flotilla::ops {
namespace {

template <typename Ctx>
int64_t Depth(const Ctx& ctx) {
  const int64_t depth = ctx.template Attr<int32_t>("depth");
  FLOTILLA_ENFORCE(depth >= 1, ctx.Where(), ": attribute depth must be >= 1, got ", depth);
  return depth;
}

void OneHotInferShape(InferShapeContext& ctx) {
  Dims x = ctx.InputDim("X");
  if (x.size() >= 2 && x.back() == 1) x.pop_back();
  x.push_back(Depth(ctx));
  ctx.SetOutputDim("Out", x);
  ctx.SetOutputDType("Out", DType::kFloat32);
}

void OneHotKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  FLOTILLA_ENFORCE(x.dtype() == DType::kInt64, ctx.Where(), ": X must be int64 class ids, got ",
                   DTypeName(x.dtype()));
  const int64_t depth = Depth(ctx), n = x.numel();
  Tensor* out = ctx.Output("Out");
  out->Resize({n, depth});
  float* o = out->mutable_data<float>();
  std::fill(o, o + n * depth, 0.0f);
  const int64_t* ids = x.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    FLOTILLA_ENFORCE(ids[i] >= 0 && ids[i] < depth, ctx.Where(), ": X[", i, "] = ", ids[i],
                     " is not a class id in [0, ", depth, ")");
    o[i * depth + ids[i]] = 1.0f;
  }
}

void LabelSmoothKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const double eps = ctx.Attr<float>("epsilon");
  FLOTILLA_ENFORCE(x.rank() >= 1 && x.numel() > 0, ctx.Where(), ": X must be a non-empty [.., C] tensor");
  const int64_t c = x.dims().back();
  Tensor* out = ctx.Output("Out");
  out->Resize(x.dims());
  VisitFloatDType(x.dtype(), ctx.Where(), [&]<typename T>() {
    std::vector<double> prior(c, 1.0 / double(c));
    if (ctx.HasInput("PriorDist")) {
      const Tensor& p = ctx.Input("PriorDist");
      FLOTILLA_ENFORCE(p.numel() == c, ctx.Where(), ": ", DescribeInput(ctx, "PriorDist", p.dims()),
                       " must hold ", c, " values (one per class), expected shape [1, ", c, "]");
      for (int64_t j = 0; j < c; ++j) prior[j] = p.data<T>()[j];
    }
    const T* xp = x.data<T>();
    T* op = out->mutable_data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) op[i] = T((1 - eps) * xp[i] + eps * prior[i % c]);
  });
}

void LabelSmoothGradKernel(ExecutionContext& ctx) {
  const Tensor& g = ctx.Input(GradVarName("Out"));
  const double eps = ctx.Attr<float>("epsilon");
  VisitFloatDType(g.dtype(), ctx.Where(), [&]<typename T>() {
    T* dx = GradOutput<T>(ctx, "X", g.dims());
    if (dx == nullptr) return;
    const T* gp = g.data<T>();
    for (int64_t i = 0; i < g.numel(); ++i) dx[i] = T((1 - eps) * gp[i]);
  });
}

}  // namespace

void RegisterLabelOps() {
  auto& r = OpRegistry::Global();
  r.Register({.type = "one_hot",
              .infer_shape = OneHotInferShape,
              .kernels = {{Place::Kind::kCPU, OneHotKernel}},
              .default_attrs = {{"depth", int32_t{1}}}});
  r.Register({.type = "label_smooth",
              .infer_shape = [](InferShapeContext& ctx) { ctx.ShareDim("X", "Out"); },
              .kernels = {{Place::Kind::kCPU, LabelSmoothKernel}},
              .grad_maker = [](const OpDesc& fwd) -> std::vector<OpDesc> {
                return GradOpBuilder(fwd, "label_smooth_grad").OutputGrads({"Out"}).InputGrads({"X"});
              },
              .default_attrs = {{"epsilon", 0.1f}},
              .no_grad_inputs = {"PriorDist"}});
  r.Register({.type = "label_smooth_grad",
              .infer_shape = [](InferShapeContext& ctx) {
                ctx.ShareDim(GradVarName("Out"), GradVarName("X"));
              },
              .kernels = {{Place::Kind::kCPU, LabelSmoothGradKernel}}});
}

}  // namespace flotilla::ops
