// The CPU kernels of batch_norm, public for sync_batch_norm (in fleet,
// which all-reduces the per-channel sums across ranks).
//
// batch_norm(X [N, C, ...], Scale [C], Bias [C], Mean [C], Variance [C])
//   -> Y, MeanOut, VarianceOut (normally Mean and Variance, updated in
//      place), SavedMean (the batch mean), SavedVariance (1/sqrt(var + eps))
// Training: batch statistics (biased variance); running = running * momentum
// + batch * (1 - momentum). is_test or use_global_stats: the running
// statistics, not updated. fuse_with_relu: Y = relu(normalized), its
// gradient masked by Y > 0.
#pragma once

#include <functional>

#include "flotilla/framework/op_registry.h"

namespace flotilla::ops {

// Sums `count` doubles elementwise across the ranks sharing a batch, in
// place; the identity for a single process.
using StatsAllReduce = std::function<void(double* data, int64_t count)>;

void BatchNormKernel(ExecutionContext& ctx, const StatsAllReduce& all_reduce);
void BatchNormGradKernel(ExecutionContext& ctx, const StatsAllReduce& all_reduce);

void BatchNormInferShape(InferShapeContext& ctx);
// The grad op, and the default attributes, of batch_norm and sync_batch_norm.
std::vector<OpDesc> BatchNormGradMaker(const OpDesc& fwd, const std::string& grad_type);
AttributeMap BatchNormDefaults();

}  // namespace flotilla::ops
