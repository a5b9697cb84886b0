// c_broadcast, c_allreduce_start and c_allreduce_wait.
#include <cstring>

#include "fleet/ops/collective_ops.h"
#include "fleet/ops/op_families.h"
#include "fleet/ring_registry.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/trace/collective_tag.h"

namespace flotilla::fleet {

namespace {

// What c_allreduce_start leaves for c_allreduce_wait.
struct PendingAllreduce {
  std::shared_ptr<comm::Work> work;
  Tensor fused;  // the bucket's buffer when it holds several gradients;
                 // the gradient variables are views of it
  bool done_inline = false;  // a sync start already reduced the bucket
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

// Gathers the bucket's gradients into one buffer (kept across steps) and
// points each gradient variable at its slice of it, so from the next step
// on backward writes straight into the buffer and nothing is copied (kernels
// reuse an output's memory when it is large enough). A gradient whose
// kernel replaced its tensor is copied in and re-pointed.
Tensor& Fuse(ExecutionContext& ctx, Tensor& fused) {
  std::vector<const Tensor*> xs = ctx.MultiInput("X");
  int64_t n = TotalNumel(xs);
  if (!fused.initialized() || fused.numel() != n || fused.dtype() != xs[0]->dtype()) {
    fused = Tensor(xs[0]->dtype(), {n});
    fused.raw_mutable_data(xs[0]->dtype());
  }
  auto* base = static_cast<char*>(fused.raw_data());
  int64_t offset = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    Tensor& x = *ctx.InputVar("X", i)->GetMutableTensor();
    char* slot = base + offset * static_cast<int64_t>(SizeOf(x.dtype()));
    if (x.raw_data() != slot) {
      std::memcpy(slot, x.raw_data(), x.nbytes());
      Tensor view = fused.Slice(offset, offset + x.numel());
      view.Reshape(x.dims());
      x = view;
    }
    offset += x.numel();
  }
  return fused;
}

void AllreduceStartKernel(ExecutionContext& ctx) {
  trace::CollectiveTag tag(ctx.AttrOr<int32_t>(kBucketAttr, -1));
  auto group = GetRing(ctx.Attr<int32_t>(kRingIdAttr));
  int comm = ctx.AttrOr<int32_t>(kCommAttr, 0);
  auto* pending = ctx.OutputVar("Handle")->GetMutableObject<PendingAllreduce>();
  FLOTILLA_CHECK(pending->work == nullptr, Internal, ctx.Where(),
                 ": the previous all-reduce of this bucket was never waited for");
  std::vector<const Tensor*> xs = ctx.MultiInput("X");
  Tensor bucket = xs.size() == 1 ? *xs[0] : Fuse(ctx, pending->fused);
  if (ctx.AttrOr<bool>("sync", false)) {
    // Nothing left to overlap with: reduce on this thread and spare the
    // hand-off to the communicator thread (Paddle's sync_nccl_allreduce).
    group->allreduce(bucket, comm::ReduceOp::kAvg, comm);
    pending->done_inline = true;
    return;
  }
  pending->work = group->allreduceAsync(bucket, comm::ReduceOp::kAvg, comm);
}

void AllreduceWaitKernel(ExecutionContext& ctx) {
  auto* pending = ctx.InputVar("Handle")->GetMutableObject<PendingAllreduce>();
  if (pending->done_inline) {
    pending->done_inline = false;
    return;
  }
  FLOTILLA_CHECK(pending->work != nullptr, Internal, ctx.Where(),
                 ": no all-reduce was started for this bucket");
  auto work = std::move(pending->work);
  pending->work = nullptr;
  // A fused bucket was reduced in its buffer, which the gradients alias.
  work->wait();
}

}  // namespace

void RegisterAllreduceOps() {
  auto& r = OpRegistry::Global();
  r.Register({.type = "c_broadcast",
              .kernels = {{Place::Kind::kCPU, BroadcastKernel}},
              .default_attrs = {{"root", int32_t{0}}}});
  r.Register({.type = "c_allreduce_start",
              .kernels = {{Place::Kind::kCPU, AllreduceStartKernel}},
              .default_attrs = {{kCommAttr, int32_t{0}}, {"sync", false}, {kBucketAttr, int32_t{-1}}}});
  r.Register({.type = "c_allreduce_wait", .kernels = {{Place::Kind::kCPU, AllreduceWaitKernel}}});
}

}  // namespace flotilla::fleet
