// StagedRows: sparse rows pulled ahead of the step that reads them. GEO's
// PrefetchNext pulls the next batch's missing rows on a background thread
// while the current step computes; the next step's Prefetch takes them
// instead of waiting on the servers.
//
//   std::future<StagedRows> ahead = PullAhead(client, std::move(staged));
//   ... the current step ...
//   StagedRows rows = ahead.get();            // rethrows the pull's error
//   const StagedRows::Table* t = rows.Find("emb");
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "flotilla/core/key_index.h"
#include "flotilla/ps/client.h"

namespace flotilla::ps {

struct StagedRows {
  struct Table {
    std::string name;
    std::vector<int64_t> keys;  // distinct
    std::vector<float> rows;    // [keys, dim], filled by PullAhead
    int64_t dim = -1;
    KeyIndex index;             // key → its row, filled by PullAhead

    const float* Row(int64_t key) const {
      const int64_t at = index.Find(key);
      return at < 0 ? nullptr : rows.data() + at * dim;
    }
  };
  int64_t epoch = 0;  // the owner's count of syncs when the pull started
  std::vector<Table> tables;

  const Table* Find(const std::string& name) const {
    for (const Table& t : tables) {
      if (t.name == name) return &t;
    }
    return nullptr;
  }
};

// Pulls every table's keys (PsClient::PullSparseTables, one round trip) on
// a background thread. The client must outlive the future.
std::future<StagedRows> PullAhead(std::shared_ptr<PsClient> client, StagedRows staged);

}  // namespace flotilla::ps
