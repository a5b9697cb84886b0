// The two JobChannels of the static rendezvous.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "flotilla/comm/store.h"
#include "launch/rendezvous.h"

namespace flotilla::launch {

// A single-node job: no one else to tell.
class LocalChannel : public JobChannel {
 public:
  void TrainerSucceeded() override { ++succeeded_; }
  int TrainersSucceeded() override { return succeeded_; }
  void Abort(const AbortNotice&) override {}
  std::optional<AbortNotice> PeerAbort() override { return std::nullopt; }
  void Finish() override {}

 private:
  std::atomic<int> succeeded_{0};
};

// A multi-node job: the nodes meet in the store. A monitor thread polls the
// store every `poll` for another node's abort and the job-wide success count,
// so the watchdog never waits on the network. It also beats a heartbeat
// counter every `heartbeat` and watches the other nodes' counters: a node
// that has neither finished nor beaten for `node_timeout` (its launcher was
// SIGKILLed, its machine is gone) counts as an abort, as does a store that
// stops answering (node 0's launcher is gone). Abort returns at once: the
// monitor publishes it, so a dead link never holds the watchdog; once the
// store was lost, Finish tells nobody instead of waiting on it.
class StoreChannel : public JobChannel {
 public:
  struct Options {
    int node = 0;
    int nnodes = 1;
    std::string store_address;
    std::vector<std::string> nodes;  // hosts, for messages
    std::chrono::milliseconds poll{200};
    std::chrono::milliseconds heartbeat{1000};
    std::chrono::milliseconds node_timeout{10000};
    std::chrono::milliseconds finish_timeout{30000};
  };
  // `store` (short timeouts) is used by the monitor thread, and by Finish
  // once the monitor stopped; `control` by the callers.
  StoreChannel(Options options, std::shared_ptr<comm::Store> store,
               std::shared_ptr<comm::Store> control);
  ~StoreChannel() override;

  void TrainerSucceeded() override;
  int TrainersSucceeded() override { return succeeded_; }
  void Abort(const AbortNotice& notice) override;
  std::optional<AbortNotice> PeerAbort() override;
  void Finish() override;

 private:
  void Monitor();
  void PollOnce();
  void Heartbeat();
  void WaitForOtherNodes();
  void SetPeerAbort(const AbortNotice& notice);
  void PublishAbort(const AbortNotice& notice);
  void Stop();

  Options options_;
  std::shared_ptr<comm::Store> store_;
  std::shared_ptr<comm::Store> control_;
  std::atomic<int> succeeded_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                  // guarded by mu_
  bool aborted_here_ = false;              // guarded by mu_
  std::optional<AbortNotice> peer_abort_;  // guarded by mu_
  std::optional<AbortNotice> pending_abort_;  // guarded by mu_; the monitor publishes it
  // Monitor thread (then Finish, after joining it): a store call failed.
  bool store_lost_ = false;
  // Monitor thread only: each node's last heartbeat value and when it changed.
  std::vector<int64_t> beats_;
  std::vector<std::chrono::steady_clock::time_point> beat_seen_;
  std::chrono::steady_clock::time_point next_beat_;
  std::thread monitor_;
};

}  // namespace flotilla::launch
