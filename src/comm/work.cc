#include "flotilla/comm/work.h"

#include <chrono>

#include "flotilla/common/interrupt.h"
#include "flotilla/trace/activity.h"
#include "flotilla/trace/trace.h"

namespace flotilla::comm {

void Work::wait() {
  trace::BlockedScope blocked;
  trace::Span span(trace::Category::kCommWait, FLOTILLA_TRACE_NAME("wait"));
  span.Arg("seq", static_cast<int64_t>(seq_)).Arg("bucket", bucket_);
  std::unique_lock<std::mutex> lock(mu_);
  // Wakes now and then so a host can interrupt a wait for a slow peer.
  while (!cv_.wait_for(lock, std::chrono::milliseconds(50), [&] { return done_; })) {
    lock.unlock();
    CheckInterrupt(std::chrono::milliseconds(0));
    lock.lock();
  }
  if (error_) std::rethrow_exception(error_);
}

bool Work::completed() {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void Work::Finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

}  // namespace flotilla::comm
