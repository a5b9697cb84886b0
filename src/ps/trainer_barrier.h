// The server side of PsClient::Barrier: a reusable barrier over the trainers
// that have not finished. A trainer that finishes while others wait counts
// as arrived, so a finishing trainer never strands the rest.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace flotilla::ps {

class TrainerBarrier {
 public:
  // Called by the last arrival with the number of live trainers in the
  // round, under the barrier's lock, before anyone is released.
  using OnComplete = std::function<void(int live_trainers)>;

  TrainerBarrier(int num_trainers, OnComplete on_complete);

  // Blocks until every live trainer has arrived. Arriving twice in a round
  // (a retried RPC) counts once. Throws InvalidArgument for a bad or
  // finished trainer id, DeadlineExceeded naming the missing trainers after
  // `timeout` (this trainer is then withdrawn from the round), Unavailable
  // once Cancel() was called.
  void Arrive(int trainer_id, std::chrono::milliseconds timeout);
  // Marks a trainer finished (idempotent) and completes the round when it
  // was the last one missing. Returns true once every trainer has finished.
  bool Finish(int trainer_id);
  // Fails current and future waits with Unavailable(reason).
  void Cancel(const std::string& reason);
  std::vector<int> finished() const;

 private:
  void CheckTrainer(int trainer_id) const;
  void CompleteIfReady();  // requires mu_
  std::string MissingTrainers() const;  // requires mu_

  const int num_trainers_;
  OnComplete on_complete_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<int> arrived_;   // guarded by mu_
  std::set<int> finished_;  // guarded by mu_
  long generation_ = 0;     // guarded by mu_; bumps when a round completes
  std::string cancelled_;   // guarded by mu_
};

}  // namespace flotilla::ps
