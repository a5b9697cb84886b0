// ElasticChannel: the JobChannel of one world of an elastic job. A monitor
// thread watches the job's keys in etcd (a watch stream, re-read on every
// change and at least every `poll`) and reports, through PeerAbort, either
// another node's failure or a change of membership — a member whose lease
// lapsed without finishing, a newcomer while the world is below MAX, or a
// newer world formed by others. After a membership change Restart() says
// "join again"; after a plain failure it waits one lease TTL (plus margin)
// for the loss that may have caused it (a trainer sees its peer's death long
// before etcd does) and only then calls the failure final, recording
// gen/<G>/stopped/<host> so that the others, still waiting, do not take
// this launcher's leaving for a lost node.
//
// Finish() after a success records gen/<G>/ok/<host>; node 0 of the world
// then waits for every member's ok, marks the job done and removes its keys.
// Thread-safe like every JobChannel.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "launch/elastic/etcd_client.h"
#include "launch/elastic/membership.h"
#include "launch/rendezvous.h"

namespace flotilla::launch {

class ElasticChannel : public JobChannel {
 public:
  struct Options {
    WorldRecord world;
    MemberId self;
    int node_index = 0;
    int min_nodes = 1;
    int max_nodes = 1;
    std::chrono::milliseconds ttl{3000};
    std::chrono::milliseconds poll{500};
    std::chrono::milliseconds finish_timeout{60000};
  };
  ElasticChannel(Options options, std::shared_ptr<EtcdClient> etcd, ElasticKeys keys);
  ~ElasticChannel() override;

  void TrainerSucceeded() override { ++succeeded_; }
  int TrainersSucceeded() override { return succeeded_; }
  void Abort(const AbortNotice& notice) override;
  std::optional<AbortNotice> PeerAbort() override;
  bool Restart(int exit_code) override;
  void Finish() override;

 private:
  void Monitor();
  void Evaluate();
  void CheckMembers();
  void CheckAbort();
  void Report(const AbortNotice& notice, bool membership_changed);
  void Stop();
  void CloseJob();

  Options options_;
  std::shared_ptr<EtcdClient> etcd_;
  ElasticKeys keys_;
  std::atomic<int> succeeded_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;                  // guarded by mu_
  bool changed_ = false;                   // guarded by mu_: membership changed
  bool aborted_here_ = false;              // guarded by mu_
  std::optional<AbortNotice> peer_abort_;  // guarded by mu_
  std::optional<int> exit_code_;           // set by Restart
  std::thread monitor_;
};

}  // namespace flotilla::launch
