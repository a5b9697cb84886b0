// A fixed pool of worker threads running submitted closures in FIFO order.
// Submit() is thread-safe and returns a future; the destructor drains the
// queue and joins the workers.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace flotilla {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs `fn` on a worker. Exceptions propagate through the future.
  std::future<void> Submit(std::function<void()> fn);
  int size() const { return static_cast<int>(workers_.size()); }

 private:
  void WorkerLoop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                           // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace flotilla
