// Rows leaving a shard: spilled to disk when an ssd table's shard is over
// its memory budget (least recently used first), or dropped by Shrink.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "flotilla/common/enforce.h"
#include "flotilla/ps/sparse_table.h"
#include "ps/sparse_shard.h"

namespace flotilla::ps {

// Removes the slots marked in `drop`, moving the others down in order,
// and rebuilds the index. Callers hold the shard lock.
void SparseTable::Compact(Shard& shard, const std::vector<bool>& drop) const {
  const size_t stride = Stride();
  size_t kept = 0;
  for (size_t i = 0; i < shard.keys.size(); ++i) {
    if (drop[i]) continue;
    if (kept != i) {
      std::memmove(shard.data.data() + kept * stride, shard.data.data() + i * stride,
                   stride * sizeof(float));
      shard.keys[kept] = shard.keys[i];
      if (!shard.last_use.empty()) shard.last_use[kept] = shard.last_use[i];
    }
    ++kept;
  }
  shard.keys.resize(kept);
  shard.data.resize(kept * stride);
  if (!shard.last_use.empty()) shard.last_use.resize(kept);
  shard.slot.Clear();
  for (size_t i = 0; i < kept; ++i) shard.slot.FindOrInsert(shard.keys[i], static_cast<uint32_t>(i));
}

// Before `incoming` rows join a shard over its budget: spills the least
// recently used rows not in use by the current batch, down to 7/8 of the
// budget (so spills come in batches, not one per new row). A batch whose
// own rows exceed the budget is let through (the budget is then exceeded
// until the next spill). Callers hold the shard lock.
void SparseTable::MakeRoom(Shard& shard, size_t incoming) {
  const size_t rows = shard.keys.size();
  if (rows + incoming <= shard_row_budget_) return;
  const size_t target = shard_row_budget_ * 7 / 8;
  const size_t want = rows + incoming - std::min(target, rows + incoming);
  std::vector<std::pair<uint32_t, uint32_t>> idle;  // (last use, slot)
  for (size_t i = 0; i < rows; ++i) {
    if (shard.last_use[i] != shard.clock) idle.emplace_back(shard.last_use[i], static_cast<uint32_t>(i));
  }
  const size_t count = std::min(want, idle.size());
  if (count == 0) return;
  std::nth_element(idle.begin(), idle.begin() + (count - 1), idle.end());
  idle.resize(count);
  std::vector<bool> drop(rows, false);
  std::vector<int64_t> keys(count);
  for (size_t j = 0; j < count; ++j) {
    drop[idle[j].second] = true;
    keys[j] = shard.keys[idle[j].second];
  }
  const size_t stride = Stride();
  disk_->db.Put(keys, [&](size_t j) { return shard.data.data() + size_t{idle[j].second} * stride; });
  for (int64_t key : keys) disk_->spilled.Add(key);
  shard.disk_rows += static_cast<int64_t>(count);
  shard.counted.spilled += static_cast<int64_t>(count);
  Compact(shard, drop);
}

// Decays a row's show/click and says whether the accessor drops it at the
// end of pass `pass`.
bool SparseTable::Stale(float* row, int32_t pass) const {
  const SparseAccessorConfig& a = config_.accessor;
  float* s = StatsPtr(row);
  s[0] *= a.show_click_decay_rate;
  s[1] *= a.show_click_decay_rate;
  int32_t last;
  std::memcpy(&last, s + 2, sizeof last);
  if (a.delete_after_unseen_passes > 0 && pass - last >= a.delete_after_unseen_passes) return true;
  const float score = a.nonclk_coeff * (s[0] - s[1]) + a.click_coeff * s[1];
  return a.delete_threshold > 0.0f && score < a.delete_threshold;
}

int64_t SparseTable::Shrink() {
  if (!stats_) {
    pass_.fetch_add(1);
    return 0;
  }
  const int32_t pass = pass_.load();
  const int32_t unseen_limit = config_.accessor.delete_after_unseen_passes;
  int64_t dropped = 0;
  for (auto& s : shards_) {
    std::lock_guard<std::mutex> lock(s->mu);
    std::vector<bool> drop(s->keys.size(), false);
    size_t n = 0;
    for (size_t i = 0; i < s->keys.size(); ++i) {
      drop[i] = Stale(s->data.data() + i * Stride(), pass);
      n += drop[i];
    }
    if (n > 0) Compact(*s, drop);
    s->counted.shrunk += static_cast<int64_t>(n);
    dropped += static_cast<int64_t>(n);
    // Admission counts: forget admitted keys, and keys unseen as long as a stale row.
    AdmissionCounts& c = s->candidates;
    AdmissionCounts kept;
    for (size_t i = 0; i < c.keys.size(); ++i) {
      if (c.seen[i] == AdmissionCounts::kAdmitted) continue;
      if (unseen_limit > 0 && pass - c.last_pass[i] >= unseen_limit) continue;
      kept.slot.FindOrInsert(c.keys[i], static_cast<uint32_t>(kept.keys.size()));
      kept.keys.push_back(c.keys[i]);
      kept.seen.push_back(c.seen[i]);
      kept.last_pass.push_back(c.last_pass[i]);
    }
    c = std::move(kept);
  }
  if (disk_) dropped += ShrinkDisk(pass);
  pass_.fetch_add(1);
  return dropped;
}

// Shrink over the rows on disk: every shard locked (a pass boundary), one
// scan (from the database's snapshot), stale rows deleted and the others'
// decayed stats written back in batches, so memory stays bounded.
int64_t SparseTable::ShrinkDisk(int32_t pass) {
  constexpr size_t kBatch = 1 << 16;
  const auto locks = LockAll();
  std::vector<int64_t> stale, kept;
  std::vector<float> kept_rows;
  const size_t stride = Stride();
  int64_t dropped = 0;
  auto flush = [&] {
    disk_->db.Delete(stale);
    disk_->db.Put(kept, [&](size_t j) { return kept_rows.data() + j * stride; });
    dropped += static_cast<int64_t>(stale.size());
    stale.clear();
    kept.clear();
    kept_rows.clear();
  };
  disk_->db.ForEach([&](int64_t key, const float* row) {
    const size_t at = kept_rows.size();
    kept_rows.insert(kept_rows.end(), row, row + stride);
    if (Stale(kept_rows.data() + at, pass)) {
      kept_rows.resize(at);
      stale.push_back(key);
      Shard& shard = *shards_[ShardIndex(KeyIndex::Hash(key))];
      ++shard.counted.shrunk;
      --shard.disk_rows;
    } else {
      kept.push_back(key);
    }
    if (stale.size() + kept.size() >= kBatch) flush();
  });
  flush();
  return dropped;
}

std::optional<SparseTable::RowStats> SparseTable::StatsOf(int64_t key) {
  FLOTILLA_ENFORCE(stats_, "sparse table '", name(), "' keeps no row statistics (no accessor rule)");
  Shard& shard = *shards_[ShardIndex(KeyIndex::Hash(key))];
  std::lock_guard<std::mutex> lock(shard.mu);
  std::vector<float> row(Stride());
  const int64_t slot = shard.slot.Find(key);
  if (slot >= 0) {
    std::memcpy(row.data(), shard.data.data() + size_t(slot) * Stride(), Stride() * sizeof(float));
  } else if (!disk_ || !disk_->db.Get(key, row.data())) {
    return std::nullopt;
  }
  const float* s = StatsPtr(row.data());
  int32_t last;
  std::memcpy(&last, s + 2, sizeof last);
  // Passes that ended without a sighting (the pass in progress not counted).
  return RowStats{s[0], s[1], std::max<int64_t>(0, pass_.load() - 1 - last)};
}

}  // namespace flotilla::ps
