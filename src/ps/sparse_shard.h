// The internals of a SparseTable shard, shared by the table's batch code
// (sparse_table.cc) and its images (sparse_table_image.cc).
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "flotilla/ps/sparse_table.h"
#include "ps/key_index.h"

namespace flotilla::ps {

// Rows live in one growing array per shard (slot i at data[i * stride]),
// not one allocation per row: millions of small rows stay compact.
// A row is [dim values | rule state | step stamp (advancing rules only)].
struct SparseTable::Shard {
  mutable std::mutex mu;
  KeyIndex slot;                                            // guarded by mu; key → slot
  std::vector<int64_t> keys;                                // guarded by mu; slot → key
  std::vector<float> data;                                  // guarded by mu
  std::unordered_map<int64_t, std::vector<float>> pending;  // guarded by mu
};

}  // namespace flotilla::ps
