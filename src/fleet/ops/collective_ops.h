// The ops the collective pass inserts. They live in fleet (not framework)
// because they call comm; fleet::init() registers them once.
//
//   c_broadcast        X (in place) from rank `root` of ring `ring_id`
//   c_allreduce_start  starts the average of the gradients X on communicator
//                      `comm` (one fused buffer when X has several); the
//                      pending operation is kept in the raw variable Handle;
//                      with attribute sync it reduces at once on the caller's
//                      thread (nothing left to overlap with)
//   c_allreduce_wait   waits for Handle and writes the averages back into X
//   c_grad_accumulate  Acc[i] += Grad[i] (gradient merge)
//   c_step_gate        Step += 1; Cond = 1 on the steps a periodic action
//                      runs (every k_steps from begin_step; every step before)
//   c_conditional_block  runs the program in attribute sub_program (base64
//                      of a serialised Program) in the current scope when
//                      Cond is non-zero
#pragma once

#include <string>

namespace flotilla::fleet {

// Registers the ops above (and every framework op). Idempotent, thread-safe.
void RegisterCollectiveOps();

inline constexpr const char* kRingIdAttr = "ring_id";
inline constexpr const char* kCommAttr = "comm";
// c_allreduce_start: the bucket's index, which traces and the flight
// recorder show ("allreduce #812 (bucket 3)").
inline constexpr const char* kBucketAttr = "bucket";

// Base64 for the sub_program attribute (string attributes must be text).
std::string Base64Encode(const std::string& bytes);
std::string Base64Decode(const std::string& text);

}  // namespace flotilla::fleet
