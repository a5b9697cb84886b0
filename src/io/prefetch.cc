// Prefetch: a producer thread filling a bounded queue of batches.
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "flotilla/common/enforce.h"
#include "flotilla/io/reader.h"
#include "flotilla/trace/standard_metrics.h"

namespace flotilla::io {
namespace {

// One prefetching pass. Owns its producer thread: the destructor asks it to
// stop, wakes it and joins it.
class Prefetcher {
 public:
  Prefetcher(BatchReader reader, size_t capacity) : capacity_(capacity) {
    thread_ = std::thread([this, reader = std::move(reader)] { Produce(reader); });
  }

  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      space_.notify_all();
    }
    thread_.join();
  }

  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Blocks until a batch, the end of the pass or the producer's error.
  std::optional<SampleBatch> Next() {
    std::unique_lock<std::mutex> lock(mu_);
    if (queue_.empty() && !done_) {  // the training loop waits for its input
      trace::InputWait waited;
      ready_.wait(lock, [&] { return !queue_.empty() || done_; });
    }
    if (!queue_.empty()) {
      SampleBatch batch = std::move(queue_.front());
      queue_.pop_front();
      space_.notify_one();
      return batch;
    }
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return std::nullopt;
  }

 private:
  void Produce(const BatchReader& reader) {
    try {
      BatchGenerator next = reader();
      while (auto batch = next()) {
        if (!Push(std::move(*batch))) return;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = std::current_exception();
    }
    Finish();
  }

  // False when the consumer has gone away.
  bool Push(SampleBatch batch) {
    std::unique_lock<std::mutex> lock(mu_);
    space_.wait(lock, [&] { return queue_.size() < capacity_ || stop_; });
    if (stop_) return false;
    queue_.push_back(std::move(batch));
    ready_.notify_one();
    return true;
  }

  void Finish() {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    ready_.notify_all();
  }

  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable ready_;  // consumer waits: an item or done_
  std::condition_variable space_;  // producer waits: room or stop_
  std::deque<SampleBatch> queue_;  // guarded by mu_
  std::exception_ptr error_;       // guarded by mu_
  bool done_ = false;              // guarded by mu_
  bool stop_ = false;              // guarded by mu_
  std::thread thread_;             // last: started after the state exists
};

}  // namespace

BatchReader Prefetch(BatchReader reader, int64_t capacity) {
  FLOTILLA_ENFORCE_GE(capacity, 1, "Prefetch: capacity must be positive");
  return [reader = std::move(reader), capacity]() -> BatchGenerator {
    auto pass = std::make_shared<Prefetcher>(reader, static_cast<size_t>(capacity));
    return [pass] { return pass->Next(); };
  };
}

}  // namespace flotilla::io
