#include "flotilla/ps/sparse_table.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"
#include "flotilla/ps/slicing.h"
#include "ps/key_index.h"
#include "ps/sparse_shard.h"
#include "ps/row_copy.h"

namespace flotilla::ps {

SparseTable::SparseTable(SparseTableConfig config) : config_(std::move(config)) {
  FLOTILLA_ENFORCE(config_.rule != nullptr, "sparse table '", config_.name, "' needs an update rule");
  FLOTILLA_ENFORCE_GE(config_.dim, 1, "sparse table '", config_.name, "' dim");
  FLOTILLA_ENFORCE_GE(config_.num_shards, 1, "sparse table '", config_.name, "' num_shards");
  rule_state_ = config_.rule->StateSize(config_.dim);
  stamped_ = config_.rule->advances();
  state_size_ = rule_state_ + (stamped_ ? kStampFloats : 0);
  for (int i = 0; i < config_.num_shards; ++i) shards_.push_back(std::make_unique<Shard>());
}

SparseTable::~SparseTable() = default;

int64_t SparseTable::size() const {
  int64_t n = 0;
  for (const auto& s : shards_) {
    std::lock_guard<std::mutex> lock(s->mu);
    n += static_cast<int64_t>(s->keys.size());
  }
  return n;
}

namespace {

// The shard of a key hash: its high 32 bits scaled to [0, shards) with a
// multiply (Lemire's range reduction), leaving the low bits to KeyIndex.
inline uint32_t ShardOfHash(uint64_t hash, size_t shards) {
  return static_cast<uint32_t>(((hash >> 32) * shards) >> 32);
}

}  // namespace

size_t SparseTable::ShardIndex(uint64_t hash) const { return ShardOfHash(hash, shards_.size()); }

SparseTable::Shard& SparseTable::ShardOf(int64_t key) const {
  return *shards_[ShardIndex(KeyIndex::Hash(key))];
}

void SparseTable::CheckSpan(size_t keys, size_t values, const char* op) const {
  FLOTILLA_ENFORCE_EQ(values, keys * static_cast<size_t>(dim()), "sparse table '", name(), "' ",
                      op, ": values must be [keys, dim=", dim(), "]");
}

// Appends the row of a key just inserted at the end of the shard: initial
// values from the initializer, fresh rule state, current as of now.
void SparseTable::AppendRow(Shard& shard, int64_t key) const {
  const size_t stride = config_.dim + state_size_;
  shard.keys.push_back(key);
  shard.data.resize(shard.data.size() + stride);
  std::span<float> row(shard.data.data() + shard.data.size() - stride, stride);
  FillInitial(config_.initializer, key, 0, row.first(config_.dim));
  config_.rule->InitState(config_.dim, row.subspan(config_.dim, rule_state_));
  if (stamped_) SetStamp(row.data(), step_.load());
}

// Rows of an advancing rule end with the step they are current at: an
// int64 in the last kStampFloats floats.
int64_t SparseTable::StampOf(const float* row) const {
  int64_t step;
  std::memcpy(&step, row + config_.dim + rule_state_, sizeof step);
  return step;
}

void SparseTable::SetStamp(float* row, int64_t step) const {
  std::memcpy(row + config_.dim + rule_state_, &step, sizeof step);
}

void SparseTable::CatchUp(float* row, int64_t now) const {
  const int64_t stamp = StampOf(row);
  if (now <= stamp) return;
  std::shared_lock<std::shared_mutex> lock(history_mu_);
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

// The slot of `key`, its row created when missing. Callers hold the shard
// lock. Inline: batches call it per key, and the found case is a probe.
inline uint32_t SparseTable::SlotOf(Shard& shard, int64_t key, uint64_t hash) const {
  auto [slot, inserted] = shard.slot.FindOrInsert(key, hash, static_cast<uint32_t>(shard.keys.size()));
  if (inserted) AppendRow(shard, key);
  return slot;
}

std::span<float> SparseTable::RowOf(Shard& shard, int64_t key) const {
  const size_t stride = config_.dim + state_size_;
  const uint32_t slot = SlotOf(shard, key, KeyIndex::Hash(key));
  return {shard.data.data() + size_t{slot} * stride, stride};
}

namespace {

// Per-thread scratch of ForEachShard, reused across batches.
struct RowBatch {
  std::vector<uint64_t> hash;   // per key
  std::vector<uint32_t> shard;  // per key
  std::vector<uint32_t> order;  // key positions grouped by shard
  std::vector<uint32_t> slot;   // per grouped position
  std::vector<float*> rows;     // per grouped position
};

}  // namespace

// Calls fn(rows, positions) once per shard the batch touches, under the
// shard's lock: rows[j] is the row (values, then rule state) of
// keys[positions[j]], created when missing and, unless `now` is
// kNoCatchUp, brought up to step `now` (see UpdateRule::advances). Keys
// are grouped by shard so each lock is taken once per batch; keys of one
// shard keep their order (repeated keys apply in order). Resolving a
// shard's rows prefetches index entries kLookAhead keys ahead, then every
// row, so the caller's pass over them runs from cache. A batch is not
// atomic across shards, which none of the modes needs.
template <typename Fn>
void SparseTable::ForEachShard(std::span<const int64_t> keys, int64_t now, Fn&& fn) {
  constexpr size_t kLookAhead = 16;
  thread_local RowBatch batch;
  const size_t n = shards_.size(), count = keys.size();
  batch.hash.resize(count);
  batch.shard.resize(count);
  batch.order.resize(count);
  batch.slot.resize(count);
  batch.rows.resize(count);
  // Raw pointers: the thread_local's address is not reloaded in the loops.
  uint64_t* const hash = batch.hash.data();
  uint32_t* const shard_of = batch.shard.data();
  uint32_t* const order = batch.order.data();
  uint32_t* const slot = batch.slot.data();
  float** const rows = batch.rows.data();
  std::vector<size_t> start(n + 1, 0);
  for (size_t i = 0; i < count; ++i) {
    hash[i] = KeyIndex::Hash(keys[i]);
    shard_of[i] = ShardOfHash(hash[i], n);
    ++start[shard_of[i] + 1];
  }
  for (size_t s = 0; s < n; ++s) start[s + 1] += start[s];
  std::vector<size_t> fill(start.begin(), start.end() - 1);
  for (size_t i = 0; i < count; ++i) order[fill[shard_of[i]]++] = static_cast<uint32_t>(i);
  const size_t stride = config_.dim + state_size_;
  for (size_t s = 0; s < n; ++s) {
    const size_t begin = start[s], end = start[s + 1];
    if (begin == end) continue;
    Shard& shard = *shards_[s];
    std::lock_guard<std::mutex> lock(shard.mu);
    // Slots first: creating a row may move the shard's data.
    for (size_t k = begin; k < end; ++k) {
      if (k + kLookAhead < end) shard.slot.Prefetch(hash[order[k + kLookAhead]]);
      slot[k] = SlotOf(shard, keys[order[k]], hash[order[k]]);
    }
    float* const data = shard.data.data();
    for (size_t k = begin; k < end; ++k) {
      rows[k] = data + size_t{slot[k]} * stride;
      __builtin_prefetch(rows[k]);
    }
    if (now != kNoCatchUp) {
      for (size_t k = begin; k < end; ++k) CatchUp(rows[k], now);
    }
    fn(std::span<float* const>(rows + begin, end - begin),
       std::span<const uint32_t>(order + begin, end - begin));
  }
}

template <typename Fn>
void SparseTable::ForEachRow(std::span<const int64_t> keys, int64_t now, Fn&& fn) {
  ForEachShard(keys, now, [&](std::span<float* const> rows, std::span<const uint32_t> positions) {
    for (size_t j = 0; j < rows.size(); ++j) fn(rows[j], positions[j]);
  });
}

void SparseTable::Pull(std::span<const int64_t> keys, std::span<float> out) {
  CheckSpan(keys.size(), out.size(), "Pull");
  const size_t d = dim();
  ForEachRow(keys, Now(), [&](const float* row, size_t i) { CopyRow(&out[i * d], row, d); });
}

void SparseTable::Push(std::span<const int64_t> keys, std::span<const float> grads,
                       std::optional<float> lr) {
  CheckSpan(keys.size(), grads.size(), "Push");
  const size_t d = dim();
  thread_local std::vector<const float*> grad_of;
  // Each push is a step of an advancing rule: rows catch up to the step
  // before it, then stand at the step after it.
  const float rate = lr.value_or(rule().learning_rate());
  const int64_t step = stamped_ ? BeginStep(rate) : kNoCatchUp;
  ForEachShard(keys, step, [&](std::span<float* const> rows, std::span<const uint32_t> positions) {
    grad_of.resize(rows.size());
    for (size_t j = 0; j < rows.size(); ++j) grad_of[j] = grads.data() + positions[j] * d;
    config_.rule->ApplyRows(rows, grad_of, dim(), rate);
    if (step == kNoCatchUp) return;
    for (float* row : rows) SetStamp(row, std::max(StampOf(row), step + 1));
  });
}

void SparseTable::Accumulate(std::span<const int64_t> keys, std::span<const float> grads,
                             std::optional<float> lr) {
  CheckSpan(keys.size(), grads.size(), "Accumulate");
  if (lr) {
    std::lock_guard<std::mutex> lock(pending_mu_);
    pending_lr_ = lr;
  }
  const size_t d = dim();
  for (size_t i = 0; i < keys.size(); ++i) {
    Shard& s = ShardOf(keys[i]);
    std::lock_guard<std::mutex> lock(s.mu);
    auto [it, inserted] = s.pending.try_emplace(keys[i], d, 0.0f);
    const float* g = grads.data() + i * d;
    for (size_t j = 0; j < d; ++j) it->second[j] += g[j];
  }
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
  const size_t d = dim();
  float rate = rule().learning_rate();
  {
    std::lock_guard<std::mutex> lock(pending_mu_);
    rate = pending_lr_.value_or(rate);
  }
  const int64_t step = stamped_ ? BeginStep(rate) : kNoCatchUp;  // a round is one step
  for (const auto& s : shards_) {
    std::lock_guard<std::mutex> lock(s->mu);
    for (auto& [key, grad] : s->pending) {
      for (float& g : grad) g *= scale;
      std::span<float> row = RowOf(*s, key);
      if (stamped_) CatchUp(row.data(), step);
      config_.rule->Apply(row.first(d), row.subspan(d, rule_state_), grad, rate);
      if (stamped_) SetStamp(row.data(), step + 1);
    }
    s->pending.clear();
  }
}

void SparseTable::PushDelta(std::span<const int64_t> keys, std::span<const float> deltas) {
  CheckSpan(keys.size(), deltas.size(), "PushDelta");
  const size_t d = dim();
  ForEachRow(keys, Now(), [&](float* row, size_t i) {
    for (size_t j = 0; j < d; ++j) row[j] += deltas[i * d + j];
  });
}

void SparseTable::Set(std::span<const int64_t> keys, std::span<const float> values) {
  CheckSpan(keys.size(), values.size(), "Set");
  const size_t d = dim();
  ForEachRow(keys, Now(), [&](float* row, size_t i) { CopyRow(row, &values[i * d], d); });
}

}  // namespace flotilla::ps
