// Aligning timelines across hosts through the job's store.
//
// The launcher of node 0 runs a ClockResponder: for every request a process
// posts under "flotilla/trace_clock/", it answers with its monotonic clock.
// AlignTraceClock measures the round trip several times and keeps the
// tightest: offset = reference - (t_send + t_receive) / 2, known to within
// half that round trip (reported as the error; on loopback tens of µs).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "flotilla/comm/store.h"
#include "flotilla/trace/clock.h"

namespace flotilla::comm {

class ClockResponder {
 public:
  // Answers requests on `store` from its own thread until destroyed.
  explicit ClockResponder(std::shared_ptr<Store> store);
  ~ClockResponder();
  ClockResponder(const ClockResponder&) = delete;
  ClockResponder& operator=(const ClockResponder&) = delete;

 private:
  void Loop();
  bool Serve(int64_t id);

  std::shared_ptr<Store> store_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Measures this process's offset to the responder's clock (`samples` round
// trips) and records it with trace::SetClockOffset. Blocks at most about
// `timeout`; throws DeadlineExceeded when no responder answers.
trace::ClockOffset AlignTraceClock(Store& store, int samples = 8,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace flotilla::comm
