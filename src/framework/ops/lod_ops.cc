// lod_reset: Out = X's data with new sequence offsets — Y's offsets when Y
// carries them, else Y's values read as offsets, else attribute target_lod.
// With append = true (Paddle's lod_append) the new level is added below X's
// levels instead of replacing them. The gradient passes Out@GRAD through
// with X's offsets.
#include <algorithm>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"
#include "framework/ops/sequence_util.h"

namespace flotilla::ops {
namespace {

LoDLevel LevelFromValues(const Tensor& y, const std::string& where) {
  FLOTILLA_ENFORCE(y.dtype() == DType::kInt32 || y.dtype() == DType::kInt64, where,
                   ": Y without LoD must hold int32 or int64 offsets, got ", DTypeName(y.dtype()));
  return VisitDType(y.dtype(), [&]<typename T>() {
    const T* p = y.data<T>();
    return LoDLevel(p, p + y.numel());
  });
}

LoD NewLoD(const ExecutionContext& ctx, const Tensor& x) {
  LoD lod;
  if (ctx.HasInput("Y")) {
    const Tensor& y = ctx.Input("Y");
    lod = y.has_lod() ? y.lod() : LoD{LevelFromValues(y, ctx.Where())};
  } else {
    const std::vector<int32_t> target = ctx.Attr<std::vector<int32_t>>("target_lod");
    FLOTILLA_ENFORCE(!target.empty(), ctx.Where(), ": give Y or a non-empty attribute target_lod");
    lod = {LoDLevel(target.begin(), target.end())};
  }
  if (ctx.Attr<bool>("append")) {
    LoD appended = x.lod();
    appended.insert(appended.end(), lod.begin(), lod.end());
    lod = std::move(appended);
  }
  CheckLoD(lod, x.rank() ? x.dim(0) : -1, ctx.Where() + ": the new LoD");
  return lod;
}

void LoDResetShape(InferShapeContext& ctx) {
  ctx.ShareDim("X", "Out");
  const int level = ctx.HasInput("Y") ? std::max(1, ctx.InputLoDLevel("Y")) : 1;
  ctx.SetOutputLoDLevel("Out", ctx.Attr<bool>("append") ? ctx.InputLoDLevel("X") + level : level);
}

void LoDResetKernel(ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  LoD lod = NewLoD(ctx, x);
  Tensor* out = ctx.Output("Out");
  out->CopyFrom(x);
  out->set_lod(std::move(lod));
}

void LoDResetGradKernel(ExecutionContext& ctx) {
  if (!ctx.HasOutput("X@GRAD")) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& g = ctx.Input("Out@GRAD");
  FLOTILLA_ENFORCE(g.numel() == x.numel(), ctx.Where(), ": Out@GRAD has shape ", DimsToString(g.dims()),
                   ", X ", DimsToString(x.dims()));
  Tensor* dx = ctx.Output("X@GRAD");
  dx->CopyFrom(g);
  dx->Reshape(x.dims());
  dx->ShareLoD(x);
}

}  // namespace

void RegisterLoDOps() {
  const AttributeMap attrs = {{"target_lod", std::vector<int32_t>{}}, {"append", false}};
  auto& r = OpRegistry::Global();
  r.RegisterWithGrad({.type = "lod_reset",
                      .infer_shape = LoDResetShape,
                      .kernels = {{Place::Kind::kCPU, LoDResetKernel}},
                      .default_attrs = attrs,
                      .no_grad_inputs = {"Y"}},
                     SequenceGrad({"X"}), LoDResetGradKernel);
}

}  // namespace flotilla::ops
