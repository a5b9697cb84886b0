// sync_batch_norm: batch_norm whose statistics (and, in the gradient, the
// sums of dY and dY * (X - mean)) are all-reduced over ring `ring_id`, so
// every rank normalises by the mean and variance of the whole distributed
// batch — data-parallel training then computes what one process would on
// the combined batch. Scale and Bias gradients stay local (the gradient
// all-reduce averages them). The kernels are batch_norm's
// (flotilla/framework/ops/batch_norm.h) with an all-reduce plugged in.
#include "fleet/ops/collective_ops.h"
#include "fleet/ops/op_families.h"
#include "fleet/ring_registry.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/framework/ops/batch_norm.h"

namespace flotilla::fleet {
namespace {

ops::StatsAllReduce RingSum(const ExecutionContext& ctx) {
  auto group = GetRing(ctx.Attr<int32_t>(kRingIdAttr));
  return [group](double* data, int64_t count) {
    group->allreduce(data, static_cast<size_t>(count), DType::kFloat64, comm::ReduceOp::kSum);
  };
}

}  // namespace

void RegisterSyncBatchNormOps() {
  auto& r = OpRegistry::Global();
  AttributeMap defaults = ops::BatchNormDefaults();
  defaults[kRingIdAttr] = int32_t{0};
  r.Register({.type = "sync_batch_norm",
              .infer_shape = ops::BatchNormInferShape,
              .kernels = {{Place::Kind::kCPU,
                           [](ExecutionContext& ctx) { ops::BatchNormKernel(ctx, RingSum(ctx)); }}},
              .grad_maker = [](const OpDesc& fwd) { return ops::BatchNormGradMaker(fwd, "sync_batch_norm_grad"); },
              .default_attrs = defaults,
              .no_grad_inputs = {"Mean", "Variance"}});
  r.Register({.type = "sync_batch_norm_grad",
              .infer_shape = InferGradShapeLikeForward,
              .kernels = {{Place::Kind::kCPU,
                           [](ExecutionContext& ctx) { ops::BatchNormGradKernel(ctx, RingSum(ctx)); }}}});
}

}  // namespace flotilla::fleet
