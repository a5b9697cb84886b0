// A trainer's side of heterogeneous parameter-server training: each
// mini-batch runs the sparse forward here, goes to the heter worker for the
// dense part, and comes back for the sparse backward and pushes. Up to
// `depth` batches are in flight, so the worker computes one batch while the
// trainer looks up the next and pushes the previous one.
#pragma once

#include <deque>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "fleet/heter_split.h"
#include "flotilla/framework/executor.h"
#include "flotilla/ps/heter_service.h"

namespace flotilla::fleet {

class HeterPipeline {
 public:
  // `split` must outlive the pipeline.
  HeterPipeline(const HeterSplit& split, std::unique_ptr<ps::HeterClient> client, int depth);
  ~HeterPipeline();  // waits for the batches in flight (their results are dropped)
  HeterPipeline(const HeterPipeline&) = delete;
  HeterPipeline& operator=(const HeterPipeline&) = delete;

  // Starts `feed` and, when `depth` batches are in flight, finishes the
  // oldest. Returns the `fetch` values (variables of the dense side) of the
  // batch finished by this call, or an empty vector while the pipeline
  // fills. Throws the worker's error naming it.
  std::vector<Tensor> Step(Executor& exe, const FeedMap& feed, const std::vector<std::string>& fetch = {});
  // Finishes every batch in flight; returns the fetches of the last one
  // (empty when none was in flight).
  std::vector<Tensor> Drain(Executor& exe);
  // Drain() and tell the worker this trainer is done.
  void Finish(Executor& exe);
  ps::HeterClient& client() { return *client_; }

 private:
  struct InFlight {
    FeedMap feed;  // the batch and the values the sparse backward reads
    std::future<ps::NamedTensors> reply;
    std::vector<std::string> fetch;
  };
  std::vector<Tensor> FinishOldest(Executor& exe);

  const HeterSplit& split_;
  std::unique_ptr<ps::HeterClient> client_;
  const int depth_;
  int64_t next_batch_ = 0;
  std::deque<InFlight> flying_;
};

}  // namespace flotilla::fleet
