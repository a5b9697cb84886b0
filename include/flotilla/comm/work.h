// Work: the handle of an asynchronous collective. Thread-safe.
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>

namespace flotilla::comm {

class Work {
 public:
  // Blocks until the operation finishes; rethrows its error, if any (every
  // call rethrows the same error).
  void wait();
  bool completed();

  // Called once by the communicator thread that ran the operation.
  void Finish(std::exception_ptr error);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;        // guarded by mu_
  std::exception_ptr error_;  // guarded by mu_
};

}  // namespace flotilla::comm
