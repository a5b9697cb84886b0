// The internals of a SparseTable shard, shared by the table's batch code
// (sparse_table.cc), its shrink and spill code (sparse_table_evict.cc) and
// its images (sparse_table_image.cc).
#pragma once

#include <cstdint>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "flotilla/core/key_index.h"
#include "flotilla/ps/sparse_table.h"
#include "ps/key_filter.h"
#include "ps/row_db.h"

namespace flotilla::ps {

// Keys counted towards admission (no row yet): sightings and the pass
// each was last seen in. Slots are dropped when a Shrink compacts them.
struct AdmissionCounts {
  KeyIndex slot;  // key → entry
  std::vector<int64_t> keys;
  std::vector<uint32_t> seen;  // sightings; kAdmitted once the key got a row
  std::vector<int32_t> last_pass;
  static constexpr uint32_t kAdmitted = UINT32_MAX;
  size_t live() const { return keys.size(); }
};

// Allocates on cache-line boundaries: rows of a multiple of 16 floats
// (dim 16 under SGD, or 16 values and 16 Adagrad accumulators) then start
// on a line, and a row of 64 bytes costs a batch one cache miss, not two.
template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kAlign); }
  friend bool operator==(const CacheLineAllocator&, const CacheLineAllocator&) { return true; }
};

// Rows live in one growing array per shard (slot i at data[i * stride]),
// not one allocation per row: millions of small rows stay compact.
// A row is [dim values | rule state | step stamp (advancing rules) |
// show, click, last pass seen (accessor)].
struct SparseTable::Shard {
  mutable std::mutex mu;
  KeyIndex slot;                                            // guarded by mu; key → slot
  std::vector<int64_t> keys;                                // guarded by mu; slot → key
  std::vector<float, CacheLineAllocator<float>> data;       // guarded by mu
  std::unordered_map<int64_t, std::vector<float>> pending;  // guarded by mu
  AdmissionCounts candidates;                               // guarded by mu
  uint64_t coin = 0;       // guarded by mu; admission-by-probability state
  // ssd: the batch clock at each slot's last access (least recently used
  // rows spill first), and this shard's batch clock.
  std::vector<uint32_t> last_use;  // guarded by mu
  uint32_t clock = 0;              // guarded by mu
  int64_t disk_rows = 0;           // guarded by mu; this shard's rows in the database
  SparseTableCounters counted;     // guarded by mu; admitted, refused, dropped, shrunk, spilled, loaded
};

// The table's database (ssd class) and the filter of the keys spilled
// into it.
class SparseTable::Disk {
 public:
  Disk(const std::string& path, size_t row_floats, bool fresh, RowDbMemory memory, size_t filter_bytes)
      : db(path, row_floats, fresh, memory), spilled(filter_bytes), memory(memory) {}
  RowDb db;
  KeyFilter spilled;
  RowDbMemory memory;
};

}  // namespace flotilla::ps
