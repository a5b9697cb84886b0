// Helpers for fleet tests: a small MLP like seed 001's, deterministic data,
// and ranks run as threads sharing an in-memory store.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/comm/hash_store.h"
#include "flotilla/fleet/fleet.h"
#include "flotilla/framework/executor.h"

namespace flotilla::fleet::testing {

struct MlpShape {
  int64_t in = 8;
  std::vector<int64_t> hidden = {16, 16};
  int64_t classes = 2;
  float l2_decay = 0;  // > 0: SGD with L2Decay(l2_decay)
  int64_t vocab = 0;   // > 0: an is_sparse embedding of an id input "ids" joins x
};

// mlp(in → hidden... → classes) with tanh/softmax, cross_entropy, mean;
// SGD(lr) minimised by `fleet` (nullptr: plain single-process minimize).
struct Model {
  std::unique_ptr<Program> main = std::make_unique<Program>();
  std::unique_ptr<Program> startup = std::make_unique<Program>();
  Variable loss;
  Variable prediction;
  std::vector<std::string> params;
  std::unique_ptr<optimizer::SGD> sgd;
  std::unique_ptr<DistributedOptimizer> dist;
};
Model BuildMlp(const MlpShape& shape, float lr, Fleet* fleet, const DistributedStrategy& strategy = {});

// The rows [begin, end) of global batch `step` (seeded by step, so every
// rank and the single-process reference agree): x [n, in] in [0,1), y [n,1]
// (and ids [n,1] in [0, vocab) when the model has an embedding).
FeedMap BatchRows(const MlpShape& shape, int step, int64_t global_batch, int64_t begin, int64_t end);

using Params = std::map<std::string, Tensor>;
Params Snapshot(const Scope& scope, const std::vector<std::string>& names);
void Restore(Scope& scope, const Params& params);
float MaxAbsDiff(const Params& a, const Params& b);

// Runs fn(rank, fleet) on `n` threads, each with its own Fleet joined
// through one HashStore (host ids from host_of(rank) when given). Rethrows
// the first failure after joining every thread.
void RunRanks(int n, const std::function<void(int, Fleet&)>& fn,
              const std::function<std::string(int)>& host_of = nullptr);

}  // namespace flotilla::fleet::testing
