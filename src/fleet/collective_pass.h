// The collective pass: rewrites a program built by an optimizer's
// backward() + apply_gradients() for data-parallel training on a ring.
//
// Data parallel (default): every gradient is averaged over the ring by
// c_allreduce_start/c_allreduce_wait pairs. Gradients are bucketed in the
// order backward produces them (about reverse parameter order), fused up to
// fuse_grad_size_in_MB per bucket, buckets spread round-robin over comm_num
// communicators; a bucket's all-reduce starts right after the op that
// finally writes its last gradient and is waited for before the first
// optimizer op, so communication overlaps the rest of backward. A bucket
// finished right before the optimizer (nothing to overlap) is reduced on the
// executor's thread when sync_nccl_allreduce is set (the default).
// LocalSGD: no gradient all-reduce; the parameters are averaged after the
// optimizer on every k_steps-th step (from begin_step; every step before).
// Gradient merge: gradients accumulate in persistable buffers; every
// k_steps-th step the buffers are all-reduced (and divided by k_steps when
// avg), the optimizer runs on them, and they are zeroed.
// sync_batch_norm: batch_norm (and its gradient) ops become
// sync_batch_norm on the ring, normalising by every rank's batch.
// Every pass also appends a c_broadcast of every parameter from rank 0 to the
// startup program.
#pragma once

#include <vector>

#include "fleet/buckets.h"
#include "flotilla/fleet/distributed_strategy.h"
#include "flotilla/framework/backward.h"
#include "flotilla/framework/program.h"

namespace flotilla::fleet {

struct CollectivePassResult {
  // The buckets all-reduced: gradients (data parallel), accumulators
  // (gradient merge) or parameters (LocalSGD).
  std::vector<Bucket> buckets;
};

// Throws InvalidArgument when a gradient is not a dense tensor of static
// shape or the strategy is out of range.
CollectivePassResult ApplyCollectivePass(Program& main, Program& startup,
                                         const std::vector<ParamGrad>& params_grads,
                                         const DistributedStrategy& strategy, int ring_id);

// Turns every batch_norm / batch_norm_grad op of `main` into its
// sync_batch_norm twin on ring `ring_id`.
void UseSyncBatchNorm(Program& main, int ring_id);

// Appends to `startup` one c_broadcast from rank 0 of every parameter of
// `main` (persistable variables marked is_parameter).
void AppendParameterBroadcast(const Program& main, Program& startup, int ring_id);

}  // namespace flotilla::fleet
