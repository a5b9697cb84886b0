#include "flotilla/common/interrupt.h"

#include <atomic>


namespace flotilla {

namespace {

std::atomic<InterruptCheck> installed{nullptr};

}  // namespace

void SetInterruptCheck(InterruptCheck check) { installed.store(check, std::memory_order_release); }

void CheckInterrupt(std::chrono::milliseconds period) {
  InterruptCheck check = installed.load(std::memory_order_relaxed);
  if (check == nullptr) return;
  thread_local std::chrono::steady_clock::time_point next_check;
  auto now = std::chrono::steady_clock::now();
  if (now < next_check) return;
  next_check = now + period;
  if (check()) throw Cancelled("interrupted by the host (a signal arrived)");
}

}  // namespace flotilla
