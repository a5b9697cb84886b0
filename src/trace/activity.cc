#include "flotilla/trace/activity.h"

#include <atomic>

#include "trace/runtime.h"

namespace flotilla::trace {

namespace {
std::atomic<uint64_t> g_op{0};  // type << 32 | output; 0 = outside ops
std::atomic<int64_t> g_since{0};
std::atomic<int64_t> g_step{0};
thread_local int64_t t_blocked_ns = 0;
}  // namespace

#ifndef FLOTILLA_NO_TRACING
void EnterOp(NameId type, NameId output) {
  g_since.store(MonoNs(), std::memory_order_relaxed);
  g_op.store(uint64_t{type} << 32 | output, std::memory_order_relaxed);
}

void LeaveOp() {
  g_op.store(0, std::memory_order_relaxed);
  g_since.store(MonoNs(), std::memory_order_relaxed);
}

BlockedScope::~BlockedScope() { t_blocked_ns += MonoNs() - start_; }
#endif

void SetStep(int64_t run) {
  int64_t step = g_step.load(std::memory_order_relaxed);
  if (run <= step) return;
  g_step.store(run, std::memory_order_relaxed);
  Runtime::OnStep(run);
}

int64_t Step() { return g_step.load(std::memory_order_relaxed); }

Activity CurrentActivity() {
  Activity a;
  const uint64_t op = g_op.load(std::memory_order_relaxed);
  a.in_op = op != 0;
  a.op = static_cast<NameId>(op >> 32);
  a.output = static_cast<NameId>(op & 0xffffffffu);
  a.since_ns = g_since.load(std::memory_order_relaxed);
  a.step = g_step.load(std::memory_order_relaxed);
  return a;
}

int64_t ThreadBlockedNs() { return t_blocked_ns; }

}  // namespace flotilla::trace
