// GeoExchange: the traffic of one GEO sync. At a sync point the trainer
// collects what changed since the last one (dense deltas, the changed rows'
// deltas); Run pushes them to the servers and pulls the dense values back
// into `fresh`, on the calling thread or a background one (it touches only
// its own tensors and the client).
#pragma once

#include <string>
#include <vector>

#include "flotilla/core/tensor.h"
#include "flotilla/ps/client.h"

namespace flotilla::ps {

struct GeoExchange {
  struct SparseDeltas {
    std::string table;
    std::vector<int64_t> keys;
    Tensor deltas;  // [keys, dim]
  };
  std::vector<DenseVar> dense_deltas;
  std::vector<SparseDeltas> sparse_deltas;
  std::vector<DenseVar> fresh;  // allocated by the collector, filled by Run

  void Run(PsClient& client) {
    if (!dense_deltas.empty()) client.PushDenseDelta(dense_deltas);
    for (const SparseDeltas& s : sparse_deltas) client.PushSparseDelta(s.table, s.keys, s.deltas);
    if (!fresh.empty()) client.PullDense(fresh);
  }
};

}  // namespace flotilla::ps
