#include "comm/shm/shm_wait.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <thread>

#include "comm/rendezvous.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/logging.h"

namespace flotilla::comm::shm {
namespace {

using Clock = std::chrono::steady_clock;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// The futex word: the low half of the 64-bit value.
uint32_t* Word(const Counter& c) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "futex word is the low half");
  return reinterpret_cast<uint32_t*>(const_cast<std::atomic<uint64_t>*>(&c.value));
}

// Shared (not FUTEX_PRIVATE): the word lives in memory mapped by several
// processes.
void FutexWait(const Counter& c, uint32_t seen, std::chrono::milliseconds limit) {
  timespec ts{time_t(limit.count() / 1000), long(limit.count() % 1000) * 1000000};
  ::syscall(SYS_futex, Word(c), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

}  // namespace

void Publish(Counter& c, uint64_t v) {
  // seq_cst store then load: a waiter that registered in `parked` before this
  // store is seen here; one that registers after sees the new value.
  c.value.store(v, std::memory_order_seq_cst);
  if (c.parked.load(std::memory_order_seq_cst) != 0) {
    ::syscall(SYS_futex, Word(c), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  }
}

std::chrono::microseconds DefaultSpin(int ranks) {
  cpu_set_t set;
  int cpus = int(std::thread::hardware_concurrency());
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  // Ranks pinned to one core each (mpirun's default) see one CPU here; the
  // machine's count then decides.
  if (cpus <= 1) cpus = int(std::thread::hardware_concurrency());
  return ranks <= cpus ? kOwnCoreSpin : std::chrono::microseconds(2);
}

Waiter::Waiter(int rank, int size, WaitOptions options, PidOf pid_of)
    : rank_(rank),
      size_(size),
      options_(options),
      pid_of_(std::move(pid_of)),
      awaited_(size_t(size)) {}

bool Waiter::Spin(const Counter& c, uint64_t target, std::chrono::microseconds spin) const {
  const auto until = Clock::now() + spin;
  while (true) {
    for (int i = 0; i < 32; ++i) {
      if (c.value.load(std::memory_order_acquire) >= target) return true;
      CpuRelax();
    }
    if (Clock::now() >= until) return false;
  }
}

void Waiter::Park(const Counter& c, uint64_t target) {
  auto& parked = const_cast<std::atomic<uint32_t>&>(c.parked);
  parked.fetch_add(1, std::memory_order_seq_cst);
  const uint64_t seen = c.value.load(std::memory_order_seq_cst);
  if (seen < target) {
    ++stats_.parks;
    FutexWait(c, uint32_t(seen), options_.check_every);
  }
  parked.fetch_sub(1, std::memory_order_relaxed);
}

void Waiter::AwaitSlow(const char* what, uint64_t target,
                       const std::vector<const Counter*>& counters,
                       std::chrono::microseconds spin) {
  const auto start = Clock::now();
  auto next_check = start + options_.check_every;
  bool spun = false, warned = false;
  ++stats_.waits;
  for (int s = 0; s < size_; ++s) {
    const Counter* c = counters[s];
    while (c && c->value.load(std::memory_order_acquire) < target) {
      if (!spun) {
        spun = true;
        if (Spin(*c, target, spin)) break;
      }
      Park(*c, target);
      const auto now = Clock::now();
      if (now >= next_check) {
        next_check = now + options_.check_every;
        CheckPeers(what, target, counters, start, warned);
      }
    }
  }
  stats_.wait_ns += uint64_t(std::chrono::nanoseconds(Clock::now() - start).count());
}

void Waiter::CheckPeers(const char* what, uint64_t target,
                        const std::vector<const Counter*>& counters, Clock::time_point start,
                        bool& warned) const {
  std::vector<int> missing;
  for (int s = 0; s < size_; ++s) {
    if (counters[s] && counters[s]->value.load(std::memory_order_acquire) < target) {
      missing.push_back(s);
    }
  }
  for (int s : missing) {
    const int64_t pid = pid_of_(s);
    FLOTILLA_CHECK(!ProcessIsDead(pid), Unavailable, "shm ", what, " on rank ", rank_, ": rank ",
                   s, " (pid ", pid, ") died");
  }
  const auto waited = Clock::now() - start;
  FLOTILLA_CHECK(waited < options_.timeout, DeadlineExceeded, "shm ", what, " on rank ", rank_,
                 ": ranks ", RankList(missing), " did not arrive within ",
                 options_.timeout.count(), "ms");
  if (!warned && waited >= options_.stall_warning_after) {
    warned = true;
    log::Warn("shm {} on rank {}: still waiting for ranks {}", what, rank_, RankList(missing));
  }
}

}  // namespace flotilla::comm::shm
