// RequestDedup: the server's memory of recent push request ids, so a push
// that a client retries after a lost reply is applied once. Ids are random
// 64-bit bases plus a counter per client, so clients never collide in
// practice. Id 0 means "no id" and is never deduplicated. Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_set>

namespace flotilla::ps {

class RequestDedup {
 public:
  explicit RequestDedup(size_t capacity = 1 << 14) : capacity_(capacity) {}

  // True the first time `id` is seen among the last `capacity` ids.
  bool FirstTime(uint64_t id) {
    if (id == 0) return true;
    std::lock_guard<std::mutex> lock(mu_);
    if (!seen_.insert(id).second) return false;
    order_.push_back(id);
    if (order_.size() > capacity_) {
      seen_.erase(order_.front());
      order_.pop_front();
    }
    return true;
  }

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::unordered_set<uint64_t> seen_;  // guarded by mu_
  std::deque<uint64_t> order_;         // guarded by mu_; oldest first
};

}  // namespace flotilla::ps
