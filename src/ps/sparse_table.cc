#include "flotilla/ps/sparse_table.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>


#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"
#include "flotilla/core/key_index.h"
#include "flotilla/core/row_copy.h"
#include "flotilla/ps/slicing.h"
#include "ps/sparse_shard.h"

namespace flotilla::ps {

SparseTableClass ParseSparseTableClass(const std::string& name) {
  if (name == "memory") return SparseTableClass::kMemory;
  if (name == "ssd") return SparseTableClass::kSsd;
  FLOTILLA_THROW(InvalidArgument, "sparse table class '", name, "' is not memory or ssd");
}

namespace {

// Bytes a row costs in memory besides its floats: its key, its LRU stamp
// and its share of the index (16-byte entries, at most half full and
// reserved up front: 2-4 entries per row).
constexpr size_t kRowOverheadBytes = sizeof(int64_t) + sizeof(uint32_t) + 4 * 16;

}  // namespace

SparseTable::SparseTable(SparseTableConfig config) : config_(std::move(config)) {
  FLOTILLA_ENFORCE(config_.rule != nullptr, "sparse table '", config_.name, "' needs an update rule");
  FLOTILLA_ENFORCE_GE(config_.dim, 1, "sparse table '", config_.name, "' dim");
  FLOTILLA_ENFORCE_GE(config_.num_shards, 1, "sparse table '", config_.name, "' num_shards");
  const SparseAccessorConfig& a = config_.accessor;
  FLOTILLA_ENFORCE(a.admit_probability > 0.0f && a.admit_probability <= 1.0f, "sparse table '",
                   config_.name, "' admit_probability ", a.admit_probability, " is outside (0, 1]");
  FLOTILLA_ENFORCE(a.admit_count >= 0 && a.delete_after_unseen_passes >= 0, "sparse table '",
                   config_.name, "': admit_count and delete_after_unseen_passes must be >= 0");
  rule_state_ = config_.rule->StateSize(config_.dim);
  stamped_ = config_.rule->advances();
  stats_ = a.keeps_stats();
  state_size_ = rule_state_ + (stamped_ ? kStampFloats : 0) + (stats_ ? kStatFloats : 0);
  for (int i = 0; i < config_.num_shards; ++i) shards_.push_back(std::make_unique<Shard>());
  if (config_.table_class == SparseTableClass::kSsd) InitDisk();
}


// The budget covers everything an ssd table keeps in memory: the filter of
// spilled keys (1/16), RocksDB's write buffers and cache (1/32 each, from
// 1 to 64 MiB), and the rows with their index (the rest).
void SparseTable::InitDisk() {
  FLOTILLA_ENFORCE(!config_.ssd_path.empty(), "ssd sparse table '", config_.name,
                   "' needs ssd_path (where rows beyond the memory budget go)");
  const size_t budget = static_cast<size_t>(std::max<int64_t>(0, config_.memory_budget_bytes));
  RowDbMemory memory;
  memory.write_buffer_bytes = memory.cache_bytes = std::clamp<size_t>(budget / 32, 1 << 20, 64 << 20);
  const size_t filter_bytes = budget / 16;
  const size_t row_bytes = Stride() * sizeof(float) + kRowOverheadBytes;
  const size_t rows_bytes = budget > filter_bytes + memory.total() ? budget - filter_bytes - memory.total() : 0;
  shard_row_budget_ = rows_bytes / row_bytes / shards_.size();
  FLOTILLA_ENFORCE(shard_row_budget_ >= 64, "ssd sparse table '", config_.name, "': memory_budget_bytes ",
                   config_.memory_budget_bytes, " leaves room for fewer than 64 rows of ", row_bytes,
                   " bytes per shard (", shards_.size(), " shards; ", memory.total() + filter_bytes,
                   " bytes go to the database's buffers and the spill filter)");
  disk_ = std::make_unique<Disk>(config_.ssd_path, Stride(), /*fresh=*/true, memory, filter_bytes);
  for (auto& s : shards_) {
    s->data.reserve(shard_row_budget_ * Stride());  // no regrowth spikes above the budget
    s->keys.reserve(shard_row_budget_);
    s->last_use.reserve(shard_row_budget_);
    s->slot.Reserve(shard_row_budget_ + shard_row_budget_ / 8);  // a batch above the budget
  }
}

SparseTable::~SparseTable() {
  if (disk_ == nullptr) return;
  const std::string path = disk_->db.path();
  disk_.reset();
  RowDb::Destroy(path);
}

int64_t SparseTable::size() const { return counters().rows; }

SparseTableCounters SparseTable::counters() const {
  SparseTableCounters c;
  for (const auto& s : shards_) {
    std::lock_guard<std::mutex> lock(s->mu);
    const SparseTableCounters& k = s->counted;
    c.memory_rows += static_cast<int64_t>(s->keys.size());
    c.rows += static_cast<int64_t>(s->keys.size()) + s->disk_rows;
    c.admitted += k.admitted;
    c.refused_sightings += k.refused_sightings;
    c.dropped_pushes += k.dropped_pushes;
    c.shrunk += k.shrunk;
    c.spilled += k.spilled;
    c.loaded += k.loaded;
    for (uint32_t seen : s->candidates.seen) c.candidates += seen != AdmissionCounts::kAdmitted;
  }
  return c;
}

namespace {

// The shard of a key hash: its high 32 bits scaled to [0, shards) with a
// multiply (Lemire's range reduction), leaving the low bits to KeyIndex.
inline uint32_t ShardOfHash(uint64_t hash, size_t shards) {
  return static_cast<uint32_t>(((hash >> 32) * shards) >> 32);
}

}  // namespace

size_t SparseTable::ShardIndex(uint64_t hash) const { return ShardOfHash(hash, shards_.size()); }

void SparseTable::CheckSpan(size_t keys, size_t values, const char* op) const {
  FLOTILLA_ENFORCE_EQ(values, keys * static_cast<size_t>(dim()), "sparse table '", name(), "' ",
                      op, ": values must be [keys, dim=", dim(), "]");
}

size_t SparseTable::PushWidth(size_t keys, size_t values, const char* op) const {
  const size_t d = static_cast<size_t>(dim());
  if (stats_ && values == keys * (d + 2)) return d + 2;
  FLOTILLA_ENFORCE_EQ(values, keys * d, "sparse table '", name(), "' ", op,
                      ": values must be [keys, dim=", dim(), "]",
                      stats_ ? " or [keys, dim + 2] (gradient, show, click)" : "");
  return d;
}

// A fresh row: initial values from the initializer, fresh rule state,
// current as of now, seen now.
void SparseTable::InitRow(int64_t key, float* row) const {
  FillInitial(config_.initializer, key, 0, std::span<float>(row, config_.dim));
  config_.rule->InitState(config_.dim, std::span<float>(row + config_.dim, rule_state_));
  if (stamped_) SetStamp(row, step_.load());
  if (stats_) {
    float* s = StatsPtr(row);
    s[0] = s[1] = 0.0f;
  }
  MarkSeen(row);
}

// Appends a row for a key not in the shard; returns its slot.
uint32_t SparseTable::AppendRow(Shard& shard, int64_t key) const {
  const uint32_t slot = static_cast<uint32_t>(shard.keys.size());
  shard.slot.FindOrInsert(key, slot);
  shard.keys.push_back(key);
  shard.data.resize(shard.data.size() + Stride());
  if (disk_) shard.last_use.push_back(shard.clock);
  return slot;
}

// Rows of an advancing rule carry the step they are current at: an int64
// in kStampFloats floats after the rule state.
int64_t SparseTable::StampOf(const float* row) const {
  int64_t step;
  std::memcpy(&step, row + config_.dim + rule_state_, sizeof step);
  return step;
}

void SparseTable::SetStamp(float* row, int64_t step) const {
  std::memcpy(row + config_.dim + rule_state_, &step, sizeof step);
}

void SparseTable::MarkSeen(float* row) const {
  if (!stats_) return;
  const int32_t pass = pass_.load();
  std::memcpy(StatsPtr(row) + 2, &pass, sizeof pass);
}

void SparseTable::AddStats(float* row, const float* show_click) const {
  if (!stats_) return;
  float* s = StatsPtr(row);
  s[0] += show_click[0];
  s[1] += show_click[1];
}

// `now` was read before the shard lock, and a load may have replaced the
// history since (with a shorter one): the steps are bounded by the history
// as it is now, and a stamp beyond it (a row pushed against the replaced
// history) counts as current.
void SparseTable::CatchUp(float* row, int64_t now) const {
  const int64_t stamp = StampOf(row);
  if (now <= stamp) return;
  std::shared_lock<std::shared_mutex> lock(history_mu_);
  now = std::min<int64_t>(now, static_cast<int64_t>(step_lr_.size()));
  if (stamp < 0 || now <= stamp) return;
  config_.rule->Advance(row, row + config_.dim, config_.dim,
                        std::span<const float>(step_lr_).subspan(stamp, now - stamp));
  SetStamp(row, now);
}

int64_t SparseTable::BeginStep(float lr) {
  std::unique_lock<std::shared_mutex> lock(history_mu_);
  step_lr_.push_back(lr);
  return step_.fetch_add(1);
}

int64_t SparseTable::Now() const { return stamped_ ? step_.load() : kNoCatchUp; }

// Whether a sighted key without a row gets one now. Callers hold the shard lock.
bool SparseTable::Admit(Shard& shard, int64_t key) {
  const SparseAccessorConfig& a = config_.accessor;
  if (a.admits_all()) return true;
  AdmissionCounts& c = shard.candidates;
  auto [at, fresh] = c.slot.FindOrInsert(key, static_cast<uint32_t>(c.keys.size()));
  if (fresh) {
    c.keys.push_back(key);
    c.seen.push_back(0);
    c.last_pass.push_back(0);
  }
  c.last_pass[at] = pass_.load();
  bool admit;
  if (a.admit_probability < 1.0f) {
    shard.coin = MixBits(shard.coin + 0x9E3779B97F4A7C15ull);
    admit = static_cast<double>(shard.coin >> 11) * (1.0 / 9007199254740992.0) < a.admit_probability;
  } else {
    admit = ++c.seen[at] >= static_cast<uint32_t>(a.admit_count);
  }
  if (admit) c.seen[at] = AdmissionCounts::kAdmitted;
  return admit;
}

namespace {

// Per-thread scratch of ForEachShard, reused across batches. Sized for
// the whole batch up front, then written through raw pointers: the loops
// never grow a vector or reload the thread-local's address per key.
struct RowBatch {
  std::vector<uint64_t> hash;   // per key
  std::vector<uint32_t> shard;  // per key
  std::vector<uint32_t> order;  // key positions grouped by shard
  std::vector<int64_t> slot;    // per grouped position; -1: no row
  std::vector<float*> rows;     // accepted rows of the shard in hand
  std::vector<uint32_t> accepted, refused;  // their positions
  std::vector<size_t> start;    // per shard + 1: where its keys begin in order
  std::vector<size_t> fill;     // per shard

  void Resize(size_t keys, size_t shards) {
    for (auto* v : {&shard, &order, &accepted, &refused}) v->resize(keys);
    hash.resize(keys);
    slot.resize(keys);
    rows.resize(keys);
    start.assign(shards + 1, 0);
    fill.resize(shards);
  }
};

}  // namespace

// Gives a row to each key of the shard's batch that has none (slot < 0):
// back from disk (ssd), or fresh when `access` allows; keys left without
// one keep slot -1. Callers hold the shard lock.
void SparseTable::ResolveMissing(Shard& shard, std::span<const int64_t> keys,
                                 std::span<const uint32_t> order, std::span<int64_t> slot,
                                 Access access) {
  std::vector<size_t> missing;
  for (size_t k = 0; k < order.size(); ++k) {
    if (slot[k] < 0) missing.push_back(k);
  }
  if (missing.empty()) return;
  if (disk_) {
    MakeRoom(shard, missing.size());
    for (size_t k = 0; k < order.size(); ++k) slot[k] = shard.slot.Find(keys[order[k]]);
    if (shard.disk_rows > 0) {
      std::vector<int64_t> wanted;  // keys that may be on disk: never spilled ones are not
      for (size_t k : missing) {
        if (disk_->spilled.MayContain(keys[order[k]])) wanted.push_back(keys[order[k]]);
      }
      disk_->db.Take(wanted, [&](size_t i, const float* row) {
        const int64_t key = wanted[i];
        if (shard.slot.Find(key) >= 0) return;  // a repeat of a key already back
        const uint32_t s = AppendRow(shard, key);
        std::memcpy(shard.data.data() + size_t{s} * Stride(), row, Stride() * sizeof(float));
        --shard.disk_rows;
        ++shard.counted.loaded;
      });
    }
  }
  const bool admission = !config_.accessor.admits_all();
  for (size_t k : missing) {
    const int64_t key = keys[order[k]];
    slot[k] = shard.slot.Find(key);  // back from disk, or a repeat created just now
    if (slot[k] >= 0) continue;
    const bool create = access == Access::kCreate || !admission ||
                        (access == Access::kSighting && Admit(shard, key));
    if (!create) continue;
    slot[k] = AppendRow(shard, key);
    InitRow(key, shard.data.data() + size_t(slot[k]) * Stride());
    ++shard.counted.admitted;
  }
}

// Calls fn(rows, positions) once per shard the batch touches, under the
// shard's lock: rows[j] is the row (values, then rule state) of
// keys[positions[j]], brought up to step `now` unless it is kNoCatchUp
// (see UpdateRule::advances). Keys without a row get one as `access` and
// the accessor allow; the positions of keys left without one go to
// refused(positions) under the same lock. Keys are grouped by shard so
// each lock is taken once per batch; keys of one shard keep their order
// (repeated keys apply in order). Resolving a shard's rows prefetches
// index entries kLookAhead keys ahead, then every row, so the caller's
// pass over them runs from cache. A batch is not atomic across shards,
// which none of the modes needs.
template <typename Fn, typename Refused>
void SparseTable::ForEachShard(std::span<const int64_t> keys, int64_t now, Access access, Fn&& fn,
                               Refused&& refused) {
  constexpr size_t kLookAhead = 16;
  thread_local RowBatch batch;
  const size_t n = shards_.size(), count = keys.size();
  batch.Resize(count, n);
  uint64_t* const hash = batch.hash.data();
  uint32_t* const shard_of = batch.shard.data();
  uint32_t* const order = batch.order.data();
  int64_t* const slot = batch.slot.data();
  float** const rows = batch.rows.data();
  uint32_t* const accepted = batch.accepted.data();
  uint32_t* const refused_at = batch.refused.data();
  size_t* const start = batch.start.data();
  size_t* const fill = batch.fill.data();
  for (size_t i = 0; i < count; ++i) {
    hash[i] = KeyIndex::Hash(keys[i]);
    shard_of[i] = ShardOfHash(hash[i], n);
    ++start[shard_of[i] + 1];
  }
  for (size_t s = 0; s < n; ++s) {
    start[s + 1] += start[s];
    fill[s] = start[s];
  }
  for (size_t i = 0; i < count; ++i) order[fill[shard_of[i]]++] = static_cast<uint32_t>(i);
  const size_t stride = Stride();
  for (size_t s = 0; s < n; ++s) {
    const size_t begin = start[s], end = start[s + 1];
    if (begin == end) continue;
    Shard& shard = *shards_[s];
    std::lock_guard<std::mutex> lock(shard.mu);
    ++shard.clock;
    bool all_found = true;
    for (size_t k = begin; k < end; ++k) {
      if (k + kLookAhead < end) shard.slot.Prefetch(hash[order[k + kLookAhead]]);
      slot[k] = shard.slot.Find(keys[order[k]], hash[order[k]]);
      if (slot[k] < 0) {
        all_found = false;
      } else if (disk_) {
        shard.last_use[slot[k]] = shard.clock;  // in use: not spilled by this batch
      }
    }
    // Rows first: creating one may move the shard's data.
    if (!all_found) {
      ResolveMissing(shard, keys, std::span<const uint32_t>(order + begin, end - begin),
                     std::span<int64_t>(slot + begin, end - begin), access);
    }
    size_t found = 0, missing = 0;
    float* const data = shard.data.data();
    for (size_t k = begin; k < end; ++k) {
      if (slot[k] < 0) {
        refused_at[missing++] = order[k];
        continue;
      }
      rows[found] = data + size_t(slot[k]) * stride;
      __builtin_prefetch(rows[found]);
      accepted[found++] = order[k];
    }
    const std::span<float* const> shard_rows(rows, found);
    if (stats_) {
      for (float* row : shard_rows) MarkSeen(row);
    }
    if (now != kNoCatchUp) {
      for (float* row : shard_rows) CatchUp(row, now);
    }
    if (missing > 0) refused(shard, std::span<const uint32_t>(refused_at, missing));
    if (found > 0) fn(shard_rows, std::span<const uint32_t>(accepted, found));
  }
}

template <typename Fn>
void SparseTable::ForEachRow(std::span<const int64_t> keys, int64_t now, Access access, Fn&& fn) {
  ForEachShard(
      keys, now, access,
      [&](std::span<float* const> rows, std::span<const uint32_t> positions) {
        for (size_t j = 0; j < rows.size(); ++j) fn(rows[j], positions[j]);
      },
      [](Shard&, std::span<const uint32_t>) {});
}

void SparseTable::Pull(std::span<const int64_t> keys, std::span<float> out) {
  CheckSpan(keys.size(), out.size(), "Pull");
  const size_t d = dim();
  ForEachShard(
      keys, Now(), Access::kSighting,
      [&](std::span<float* const> rows, std::span<const uint32_t> positions) {
        for (size_t j = 0; j < rows.size(); ++j) CopyRow(&out[positions[j] * d], rows[j], d);
      },
      [&](Shard& shard, std::span<const uint32_t> positions) {  // not admitted (yet): zeros
        for (uint32_t i : positions) std::fill_n(&out[i * d], d, 0.0f);
        shard.counted.refused_sightings += static_cast<int64_t>(positions.size());
      });
}

// One step of the rule over rows that exist (or may be created); keys
// refused a row drop their gradient.
void SparseTable::ApplyGrads(std::span<const int64_t> keys, const float* grads, size_t width,
                             float rate, int64_t step) {
  const size_t d = dim();
  thread_local std::vector<const float*> grad_rows;
  grad_rows.resize(keys.size());
  const float** const grad_of = grad_rows.data();
  ForEachShard(
      keys, step, Access::kExisting,
      [&](std::span<float* const> rows, std::span<const uint32_t> positions) {
        for (size_t j = 0; j < rows.size(); ++j) grad_of[j] = grads + positions[j] * width;
        config_.rule->ApplyRows(rows, std::span<const float* const>(grad_of, rows.size()), dim(), rate);
        if (width > d) {
          for (size_t j = 0; j < rows.size(); ++j) AddStats(rows[j], grad_of[j] + d);
        }
        if (step == kNoCatchUp) return;
        for (float* row : rows) SetStamp(row, std::max(StampOf(row), step + 1));
      },
      [](Shard& shard, std::span<const uint32_t> positions) {
        shard.counted.dropped_pushes += static_cast<int64_t>(positions.size());
      });
}

void SparseTable::Push(std::span<const int64_t> keys, std::span<const float> grads,
                       std::optional<float> lr) {
  const size_t width = PushWidth(keys.size(), grads.size(), "Push");
  // Each push is a step of an advancing rule: rows catch up to the step
  // before it, then stand at the step after it.
  const float rate = lr.value_or(rule().learning_rate());
  const int64_t step = stamped_ ? BeginStep(rate) : kNoCatchUp;
  ApplyGrads(keys, grads.data(), width, rate, step);
}

void SparseTable::Accumulate(std::span<const int64_t> keys, std::span<const float> grads,
                             std::optional<float> lr) {
  const size_t width = PushWidth(keys.size(), grads.size(), "Accumulate");
  if (lr) {
    std::lock_guard<std::mutex> lock(pending_mu_);
    pending_lr_ = lr;
  }
  const size_t d = dim();
  for (size_t i = 0; i < keys.size(); ++i) {
    Shard& s = *shards_[ShardIndex(KeyIndex::Hash(keys[i]))];
    std::lock_guard<std::mutex> lock(s.mu);
    auto [it, inserted] = s.pending.try_emplace(keys[i], d, 0.0f);
    const float* g = grads.data() + i * width;
    for (size_t j = 0; j < d; ++j) it->second[j] += g[j];
  }
  if (width == d) return;
  ForEachShard(
      keys, kNoCatchUp, Access::kExisting,
      [&](std::span<float* const> rows, std::span<const uint32_t> positions) {
        for (size_t j = 0; j < rows.size(); ++j) AddStats(rows[j], &grads[positions[j] * width + d]);
      },
      [](Shard&, std::span<const uint32_t>) {});
}

bool SparseTable::HasPending() const {
  for (const auto& s : shards_) {
    std::lock_guard<std::mutex> lock(s->mu);
    if (!s->pending.empty()) return true;
  }
  return false;
}

void SparseTable::ApplyPending(int divisor) {
  FLOTILLA_ENFORCE_GE(divisor, 1, "sparse table '", name(), "' ApplyPending");
  const float scale = 1.0f / static_cast<float>(divisor);
  float rate = rule().learning_rate();
  {
    std::lock_guard<std::mutex> lock(pending_mu_);
    rate = pending_lr_.value_or(rate);
  }
  std::vector<int64_t> keys;
  std::vector<float> grads;
  for (const auto& s : shards_) {
    std::lock_guard<std::mutex> lock(s->mu);
    for (auto& [key, grad] : s->pending) {
      keys.push_back(key);
      for (float g : grad) grads.push_back(g * scale);
    }
    s->pending.clear();
  }
  const int64_t step = stamped_ ? BeginStep(rate) : kNoCatchUp;  // a round is one step
  ApplyGrads(keys, grads.data(), dim(), rate, step);
}

void SparseTable::PushDelta(std::span<const int64_t> keys, std::span<const float> deltas) {
  CheckSpan(keys.size(), deltas.size(), "PushDelta");
  const size_t d = dim();
  ForEachShard(
      keys, Now(), Access::kExisting,
      [&](std::span<float* const> rows, std::span<const uint32_t> positions) {
        for (size_t j = 0; j < rows.size(); ++j) {
          const float* delta = &deltas[positions[j] * d];
          for (size_t c = 0; c < d; ++c) rows[j][c] += delta[c];
        }
      },
      [](Shard& shard, std::span<const uint32_t> positions) {
        shard.counted.dropped_pushes += static_cast<int64_t>(positions.size());
      });
}

void SparseTable::Set(std::span<const int64_t> keys, std::span<const float> values) {
  CheckSpan(keys.size(), values.size(), "Set");
  const size_t d = dim();
  ForEachRow(keys, Now(), Access::kCreate,
             [&](float* row, size_t i) { CopyRow(row, &values[i * d], d); });
}

}  // namespace flotilla::ps
