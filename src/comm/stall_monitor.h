// Stall monitor (private to comm): names the ranks missing from an op that
// has been pending longer than stall_warning_after.
//
// Each communicator counts the ops it started and finished. A monitor thread
// looks at them; when op #k of communicator c has been pending too long, this
// rank writes k under "progress/c<c>/<rank>" in the group's store and reads
// the others' entries: ranks that are stuck in op #k too have written k;
// those that have not (still computing, or dead) are named in a warning.
// Nothing touches the store while ops complete in time.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "flotilla/comm/process_group.h"

namespace flotilla::comm {

// Progress of one communicator, updated by whichever thread runs its ops.
struct OpProgress {
  std::atomic<uint64_t> started{0};
  std::atomic<uint64_t> finished{0};
  std::atomic<int64_t> started_at_ns{0};  // steady clock

  void Start();
  void Finish() { finished.fetch_add(1, std::memory_order_release); }
};

class ProcessGroup::StallMonitor {
 public:
  StallMonitor(std::shared_ptr<Store> store, int rank, int size,
               std::chrono::milliseconds stall_after, std::vector<OpProgress*> progress);
  ~StallMonitor();

 private:
  void Loop();
  void Check(size_t comm, uint64_t seq, std::chrono::seconds pending);

  std::shared_ptr<Store> store_;
  int rank_;
  int size_;
  std::chrono::milliseconds stall_after_;
  std::vector<OpProgress*> progress_;
  std::vector<uint64_t> warned_;  // last op warned about, per communicator
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace flotilla::comm
