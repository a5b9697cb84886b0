// Progress counters in shared memory and waiting on them (private to shm).
//
// A rank publishes its progress by storing a growing value in one of its
// Counters; peers wait until the value reaches what they need. Waiting spins
// for a short, time-bounded while (the peer usually runs on another core and
// is microseconds away), then parks in the kernel with a futex wait on the
// counter's word; Publish wakes parked waiters. Nothing sleeps for a fixed
// time, so a waiter neither burns the core a late peer needs nor oversleeps
// once the peer has posted.
//
// While parked, a waiter wakes every `check_every` to see whether the ranks
// it waits for are still alive and whether the deadline has passed, so a dead
// peer fails the call within milliseconds, naming the rank.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace flotilla::comm::shm {

// One cache line: the value and the number of waiters parked on it. The
// futex word is the value's low 32 bits (little-endian x86/ARM), which change
// on every publish of a new value.
struct alignas(64) Counter {
  std::atomic<uint64_t> value{0};
  std::atomic<uint32_t> parked{0};
};
static_assert(sizeof(Counter) == 64);

// Stores `v` (release) and wakes the waiters parked on `c`. Cheap when none
// is parked: no system call.
void Publish(Counter& c, uint64_t v);

struct WaitOptions {
  std::chrono::milliseconds timeout{1800000};
  std::chrono::milliseconds stall_warning_after{60000};
  // Spin this long before parking. 0 parks at once.
  std::chrono::microseconds spin{50};
  std::chrono::milliseconds check_every{10};
};

// Counts of what waiting cost, for benches and diagnosis.
struct WaitStats {
  uint64_t waits = 0;     // Await calls that had to wait at all
  uint64_t parks = 0;     // futex waits entered
  uint64_t wait_ns = 0;   // time spent waiting (both kinds)
};

// Waits for other ranks' counters. One per backend; not thread-safe.
class Waiter {
 public:
  // `pid_of(rank)` reads the rank's process id (0 while unknown); it is
  // called only while parked. Errors name `rank` as the waiting rank.
  using PidOf = std::function<int64_t(int)>;
  Waiter(int rank, int size, WaitOptions options, PidOf pid_of);

  // Blocks until counter_of(s)->value >= target for every rank s whose
  // counter_of(s) is non-null. Throws Unavailable naming a dead rank,
  // DeadlineExceeded naming the ranks still short after the timeout; warns
  // naming them after stall_warning_after.
  template <typename CounterOf>
  void Await(const char* what, uint64_t target, const CounterOf& counter_of) {
    Await(what, target, counter_of, options_.spin);
  }
  // The same, spinning up to `spin` before parking: for a wait known to take
  // longer than the usual spin (a peer copying a whole buffer), where waking
  // from a park would add to it.
  template <typename CounterOf>
  void Await(const char* what, uint64_t target, const CounterOf& counter_of,
             std::chrono::microseconds spin) {
    for (int s = 0; s < size_; ++s) {
      const Counter* c = counter_of(s);
      if (c && c->value.load(std::memory_order_acquire) < target) {
        for (int t = 0; t < size_; ++t) awaited_[t] = counter_of(t);
        return AwaitSlow(what, target, awaited_, spin);
      }
    }
  }

  const WaitStats& stats() const { return stats_; }
  const WaitOptions& options() const { return options_; }

 private:
  void AwaitSlow(const char* what, uint64_t target, const std::vector<const Counter*>& counters,
                 std::chrono::microseconds spin);
  // Spins up to `spin` for `c`; true when it reached `target`.
  bool Spin(const Counter& c, uint64_t target, std::chrono::microseconds spin) const;
  // Parks on `c` until it moves, `check_every` passes, or it reaches target.
  void Park(const Counter& c, uint64_t target);
  void CheckPeers(const char* what, uint64_t target, const std::vector<const Counter*>& counters,
                  std::chrono::steady_clock::time_point start, bool& warned) const;

  int rank_;
  int size_;
  WaitOptions options_;
  PidOf pid_of_;
  WaitStats stats_;
  std::vector<const Counter*> awaited_;  // scratch, one per rank: no allocation per wait
};

// The spin budget for a group of `ranks` on this host: kOwnCoreSpin when
// every rank can own a core; otherwise 2 µs, since spinning would steal the
// core a peer needs.
constexpr std::chrono::microseconds kOwnCoreSpin{50};
std::chrono::microseconds DefaultSpin(int ranks);

}  // namespace flotilla::comm::shm
