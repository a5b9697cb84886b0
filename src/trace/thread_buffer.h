// ThreadBuffer: one thread's ring of events. Single producer (the owning
// thread) and single consumer (the trace thread): the producer publishes
// with a release store of head_, the consumer frees slots with a release
// store of tail_; neither takes a lock. A full ring drops the new event.
//
// BufferRegistry holds every thread's buffer (shared with the thread, so a
// buffer outlives its thread until drained).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "flotilla/trace/event.h"

namespace flotilla::trace {

class ThreadBuffer {
 public:
  // capacity: a power of two.
  ThreadBuffer(uint32_t thread_index, size_t capacity);

  // Producer side: the owning thread only.
  void Push(const Event& e) {
    const uint64_t h = head_.load(std::memory_order_relaxed);
    if (h - cached_tail_ >= capacity_) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (h - cached_tail_ >= capacity_) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return;
      }
    }
    events_[h & mask_] = e;
    head_.store(h + 1, std::memory_order_release);
  }

  // Consumer side: calls fn(event) for each published event, oldest first,
  // then frees their slots. One consumer at a time.
  template <typename Fn>
  size_t Drain(Fn&& fn) {
    const uint64_t t = tail_.load(std::memory_order_relaxed);
    const uint64_t h = head_.load(std::memory_order_acquire);
    for (uint64_t i = t; i < h; ++i) fn(events_[i & mask_]);
    tail_.store(h, std::memory_order_release);
    return static_cast<size_t>(h - t);
  }

  bool empty() const {
    return tail_.load(std::memory_order_acquire) == head_.load(std::memory_order_acquire);
  }
  uint32_t thread_index() const { return thread_index_; }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  // The row's name; set by its thread, read by the consumer.
  void set_name(std::string name);
  std::string name() const;
  int os_tid() const { return os_tid_; }

 private:
  const uint32_t thread_index_;
  const uint64_t capacity_;
  const uint64_t mask_;
  const int os_tid_;
  std::unique_ptr<Event[]> events_;
  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t cached_tail_ = 0;  // producer's copy of tail_
  alignas(64) std::atomic<uint64_t> tail_{0};
  std::atomic<uint64_t> dropped_{0};
  mutable std::mutex name_mu_;
  std::string name_;  // guarded by name_mu_
};

class BufferRegistry {
 public:
  static BufferRegistry& Get();
  // The calling thread's buffer, created on first use.
  ThreadBuffer& Local();
  // Names the calling thread's row, now or when its buffer is created.
  void SetLocalName(std::string name);
  // Frees the drained buffers of threads that have ended.
  void PruneDrained();
  // Every buffer registered so far.
  std::vector<std::shared_ptr<ThreadBuffer>> All() const;
  // Events per new buffer (FLOTILLA_TRACE_BUFFER_EVENTS, default 4096).
  void set_capacity(size_t events);

 private:
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers_;  // guarded by mu_
  size_t capacity_ = 4096;                              // guarded by mu_
  uint32_t next_index_ = 1;                             // guarded by mu_
};

}  // namespace flotilla::trace
