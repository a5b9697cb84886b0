// Helpers shared by the collective pass's parts.
#pragma once

#include <string>
#include <vector>

#include "fleet/buckets.h"
#include "flotilla/framework/backward.h"
#include "flotilla/framework/program.h"

namespace flotilla::fleet {

// An op tagged with `role` (op_role attribute) and the registry's defaults.
OpDesc MakeOp(const std::string& type, int32_t role);

// Bucket items for `vars` of `block`, in order. Throws InvalidArgument for a
// variable that is not a dense tensor of static shape.
std::vector<BucketItem> BucketItems(const Block& block, const std::vector<std::string>& vars);

struct AllreduceOps {
  std::vector<OpDesc> starts;  // one per bucket, in bucket order
  std::vector<OpDesc> waits;
};
// The start/wait pair of each bucket; their handle variables ("tag") are
// declared in `block`.
AllreduceOps MakeAllreduceOps(Block& block, const std::vector<Bucket>& buckets, int ring_id,
                              const std::string& tag, int32_t role);

// A persistable variable like `like` (shape, dtype), zeroed by `startup`.
void CreateZeroedVar(Block& main, Program& startup, const std::string& name, const VarDesc& like);

// A c_step_gate on a new persistable int64 step counter "<tag>.step"; returns
// the name of its int32 Cond output.
std::string AppendStepGate(Block& main, Program& startup, const std::string& tag, int k_steps,
                           int begin_step);

// Appends a c_conditional_block running `ops` (in order) when `cond` is set.
// `outs` documents what the block writes.
void AppendConditionalBlock(Block& main, const std::string& cond, const std::string& tag,
                            const std::vector<OpDesc>& ops, const std::vector<std::string>& outs);

}  // namespace flotilla::fleet
