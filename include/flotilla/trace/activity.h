// What this process is doing now, for the flight recorder's dumps ("now in
// op mul_grad (step 97)") and the per-step split of time into computing and
// waiting for communication. Always on; a few relaxed stores per op.
#pragma once

#include <cstdint>

#include "flotilla/trace/clock.h"
#include "flotilla/trace/names.h"

namespace flotilla::trace {

#ifdef FLOTILLA_NO_TRACING
inline void EnterOp(NameId, NameId) {}
inline void LeaveOp() {}
#else
// The executor, around each op it runs. Last writer wins when several
// threads run executors.
void EnterOp(NameId type, NameId output);
void LeaveOp();
#endif
// The executor, at the start of each run: `run` is how many times this
// program has run (from 1). The process's step is the largest seen, so the
// training program's count wins over startup and test programs. Opens and
// closes a --timeline_steps window.
void SetStep(int64_t run);
int64_t Step();

struct Activity {
  bool in_op = false;
  NameId op = kNoName;
  NameId output = kNoName;
  int64_t since_ns = 0;  // MonoNs() when the op (or the wait outside ops) began
  int64_t step = 0;
};
Activity CurrentActivity();

// Time the calling thread spends blocked on communication (collectives,
// parameter-server calls), accumulated per thread: an executor's run
// subtracts it from its wall time to split compute from communication.
#ifdef FLOTILLA_NO_TRACING
class BlockedScope {};
#else
class BlockedScope {
 public:
  BlockedScope() : start_(MonoNs()) {}
  ~BlockedScope();
  BlockedScope(const BlockedScope&) = delete;
  BlockedScope& operator=(const BlockedScope&) = delete;

 private:
  int64_t start_;
};
#endif
// Nanoseconds the calling thread has spent in BlockedScopes.
int64_t ThreadBlockedNs();

}  // namespace flotilla::trace
