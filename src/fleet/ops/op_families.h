// Registration functions of the collective op files (collective_ops.cc
// calls them once).
#pragma once

namespace flotilla::fleet {

void RegisterAllreduceOps();  // c_broadcast, c_allreduce_start, c_allreduce_wait
void RegisterStepOps();       // c_grad_accumulate, c_step_gate, c_conditional_block
void RegisterSyncBatchNormOps();  // sync_batch_norm

}  // namespace flotilla::fleet
