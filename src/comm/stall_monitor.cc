#include "comm/stall_monitor.h"

#include "comm/rendezvous.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/strings.h"
#include "flotilla/trace/dump.h"

namespace flotilla::comm {

using Clock = std::chrono::steady_clock;

namespace {
int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}
}  // namespace

void OpProgress::Start() {
  started_at_ns.store(NowNs(), std::memory_order_relaxed);
  started.fetch_add(1, std::memory_order_release);
}

ProcessGroup::StallMonitor::StallMonitor(std::shared_ptr<Store> store, int rank, int size,
                                         std::chrono::milliseconds stall_after,
                                         std::vector<OpProgress*> progress)
    : store_(std::move(store)),
      rank_(rank),
      size_(size),
      stall_after_(stall_after),
      progress_(std::move(progress)),
      warned_(progress_.size(), 0) {
  thread_ = std::thread([this] { Loop(); });
}

ProcessGroup::StallMonitor::~StallMonitor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ProcessGroup::StallMonitor::Loop() {
  const auto period = std::max(std::chrono::milliseconds(10),
                               std::min(stall_after_ / 4, std::chrono::milliseconds(1000)));
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, period, [&] { return stop_; })) {
    for (size_t c = 0; c < progress_.size(); ++c) {
      const uint64_t seq = progress_[c]->started.load(std::memory_order_acquire);
      if (seq == progress_[c]->finished.load(std::memory_order_acquire) || warned_[c] == seq) {
        continue;
      }
      auto pending = std::chrono::nanoseconds(
          NowNs() - progress_[c]->started_at_ns.load(std::memory_order_relaxed));
      if (pending < stall_after_) continue;
      warned_[c] = seq;
      lock.unlock();
      Check(c, seq, std::chrono::duration_cast<std::chrono::seconds>(pending));
      lock.lock();
    }
  }
}

void ProcessGroup::StallMonitor::Check(size_t comm, uint64_t seq, std::chrono::seconds pending) {
  const std::string base = "progress/c" + std::to_string(comm) + "/";
  try {
    store_->setString(base + std::to_string(rank_), std::to_string(seq));
    std::vector<int> missing;
    for (int r = 0; r < size_; ++r) {
      const std::string key = base + std::to_string(r);
      if (r == rank_) continue;
      if (!store_->check({key}) || ParseInt(store_->getString(key), key) < int64_t(seq)) {
        missing.push_back(r);
      }
    }
    log::Warn("communicator {} op #{} on rank {} pending for {}s; ranks not yet in it: {}", comm,
              seq, rank_, pending.count(), RankList(missing));
    trace::ReportStall(StrCat("communicator ", comm, " op #", seq, " pending for ",
                              pending.count(), " s; ranks not yet in it: ", RankList(missing)));
  } catch (const Error& e) {
    log::Warn("communicator {} op #{} on rank {} pending for {}s (store unreachable: {})", comm,
              seq, rank_, pending.count(), e.what());
  }
}

}  // namespace flotilla::comm
