// c_broadcast, c_allreduce_start and c_allreduce_wait.
#include <cstring>

#include "fleet/ops/collective_ops.h"
#include "fleet/ops/op_families.h"
#include "fleet/ring_registry.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla::fleet {

namespace {

// What c_allreduce_start leaves for c_allreduce_wait.
struct PendingAllreduce {
  std::shared_ptr<comm::Work> work;
  Tensor fused;  // the bucket's buffer when it holds several gradients
};

void BroadcastKernel(ExecutionContext& ctx) {
  auto group = GetRing(ctx.Attr<int32_t>(kRingIdAttr));
  int root = ctx.AttrOr<int32_t>("root", 0);
  for (Tensor* t : ctx.MultiOutput("Out")) group->broadcast(*t, root);
}

int64_t TotalNumel(const std::vector<const Tensor*>& xs) {
  int64_t n = 0;
  for (const Tensor* x : xs) {
    FLOTILLA_CHECK(x->dtype() == xs[0]->dtype(), InvalidArgument,
                   "c_allreduce_start: a fused bucket mixes ", DTypeName(xs[0]->dtype()), " and ",
                   DTypeName(x->dtype()));
    n += x->numel();
  }
  return n;
}

// Packs the bucket's gradients into one buffer (reused across steps).
Tensor& Pack(const std::vector<const Tensor*>& xs, Tensor& fused) {
  int64_t n = TotalNumel(xs);
  if (!fused.initialized() || fused.numel() != n || fused.dtype() != xs[0]->dtype()) {
    fused = Tensor(xs[0]->dtype(), {n});
    fused.raw_mutable_data(xs[0]->dtype());
  }
  auto* dst = static_cast<char*>(fused.raw_data());
  for (const Tensor* x : xs) {
    std::memcpy(dst, x->raw_data(), x->nbytes());
    dst += x->nbytes();
  }
  return fused;
}

void AllreduceStartKernel(ExecutionContext& ctx) {
  auto group = GetRing(ctx.Attr<int32_t>(kRingIdAttr));
  int comm = ctx.AttrOr<int32_t>(kCommAttr, 0);
  auto* pending = ctx.OutputVar("Handle")->GetMutableObject<PendingAllreduce>();
  FLOTILLA_CHECK(pending->work == nullptr, Internal, ctx.Where(),
                 ": the previous all-reduce of this bucket was never waited for");
  std::vector<const Tensor*> xs = ctx.MultiInput("X");
  if (xs.size() == 1) {
    pending->work = group->allreduceAsync(*xs[0], comm::ReduceOp::kAvg, comm);
  } else {
    pending->work = group->allreduceAsync(Pack(xs, pending->fused), comm::ReduceOp::kAvg, comm);
  }
}

void AllreduceWaitKernel(ExecutionContext& ctx) {
  auto* pending = ctx.InputVar("Handle")->GetMutableObject<PendingAllreduce>();
  FLOTILLA_CHECK(pending->work != nullptr, Internal, ctx.Where(),
                 ": no all-reduce was started for this bucket");
  auto work = std::move(pending->work);
  pending->work = nullptr;
  work->wait();
  std::vector<Tensor*> outs = ctx.MultiOutput("Out");
  if (outs.size() == 1) return;  // reduced in place
  const auto* src = static_cast<const char*>(pending->fused.raw_data());
  for (Tensor* out : outs) {
    std::memcpy(out->raw_data(), src, out->nbytes());
    src += out->nbytes();
  }
}

}  // namespace

void RegisterAllreduceOps() {
  auto& r = OpRegistry::Global();
  r.Register({.type = "c_broadcast",
              .kernels = {{Place::Kind::kCPU, BroadcastKernel}},
              .default_attrs = {{"root", int32_t{0}}}});
  r.Register({.type = "c_allreduce_start",
              .kernels = {{Place::Kind::kCPU, AllreduceStartKernel}},
              .default_attrs = {{kCommAttr, int32_t{0}}}});
  r.Register({.type = "c_allreduce_wait", .kernels = {{Place::Kind::kCPU, AllreduceWaitKernel}}});
}

}  // namespace flotilla::fleet
