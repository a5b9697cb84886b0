// Work: the handle of an asynchronous collective. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>

namespace flotilla::comm {

class Work {
 public:
  // seq: the collective's number on its communicator (0: not a collective);
  // bucket: its fused gradient bucket (-1: none). Both label the wait in
  // the timeline.
  explicit Work(uint64_t seq = 0, int bucket = -1) : seq_(seq), bucket_(bucket) {}

  // Blocks until the operation finishes; rethrows its error, if any (every
  // call rethrows the same error). The time counts as the calling thread's
  // communication time (trace::BlockedScope). Throws Cancelled when the
  // host's interrupt check fires while waiting (common/interrupt.h); the
  // operation itself goes on.
  void wait();
  bool completed();

  // Called once by the communicator thread that ran the operation.
  void Finish(std::exception_ptr error);

 private:
  const uint64_t seq_;
  const int bucket_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;        // guarded by mu_
  std::exception_ptr error_;  // guarded by mu_
};

}  // namespace flotilla::comm
