#include "flotilla/ps/sparse_table.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"
#include "flotilla/ps/slicing.h"
#include "ps/byte_io.h"
#include "ps/key_index.h"
#include "ps/row_copy.h"

namespace flotilla::ps {

// Rows live in one growing array per shard (slot i at data[i * stride]),
// not one allocation per row: millions of small rows stay compact.
// A row is [dim values | state_size floats of rule state].
struct SparseTable::Shard {
  mutable std::mutex mu;
  KeyIndex slot;                                            // guarded by mu; key → slot
  std::vector<int64_t> keys;                                // guarded by mu; slot → key
  std::vector<float> data;                                  // guarded by mu
  std::unordered_map<int64_t, std::vector<float>> pending;  // guarded by mu
};

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
// kNoCatchUp, brought up to step `now` (see UpdateRule::advances). Keys are grouped by shard so
// each lock is taken once per batch; keys of one shard keep their order
// (repeated keys apply in order). Resolving a shard's rows prefetches
// index entries kLookAhead keys ahead, then every row, so the caller's
// pass over them runs from cache. A batch is not atomic across shards,
// which none of the modes needs.
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

std::string SparseTable::Serialize() const {
  const size_t stride = dim() + state_size_;
  std::vector<std::pair<int64_t, std::vector<float>>> rows;
  for (const auto& s : shards_) {
    std::lock_guard<std::mutex> lock(s->mu);
    for (size_t i = 0; i < s->keys.size(); ++i) {
      const float* row = s->data.data() + i * stride;
      rows.emplace_back(s->keys[i], std::vector<float>(row, row + stride));
    }
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  ByteWriter w;
  w.PutString(name());
  w.Put<int64_t>(dim());
  w.PutString(rule().name());
  w.Put<int64_t>(state_size_);
  if (stamped_) {
    std::shared_lock<std::shared_mutex> lock(history_mu_);
    w.Put<uint64_t>(step_lr_.size());
    w.PutSpan<float>(step_lr_);
  }
  w.Put<uint64_t>(rows.size());
  for (const auto& [key, row] : rows) {
    w.Put<int64_t>(key);
    w.PutSpan<float>(row);
  }
  return std::move(w.str());
}

// One saved image: its step history (advancing rules) and its rows.
struct SparseTable::Image {
  std::vector<float> step_lr;
  std::vector<int64_t> keys;
  std::vector<float> data;  // rows of `stride` floats, in key order
};

SparseTable::Image SparseTable::ParseImage(std::string_view image, const std::string& what) const {
  ByteReader r(image, what);
  const std::string stored_name = r.GetString();
  const int64_t stored_dim = r.Get<int64_t>();
  const std::string stored_rule = r.GetString();
  const int64_t stored_state = r.Get<int64_t>();
  FLOTILLA_CHECK(stored_name == name() && stored_dim == dim(), Corruption, what,
                 ": holds sparse table '", stored_name, "' of dim ", stored_dim, ", expected '",
                 name(), "' of dim ", dim());
  FLOTILLA_CHECK(stored_rule == rule().name() && stored_state == state_size_, Corruption, what,
                 ": table '", name(), "' was saved with rule '", stored_rule,
                 "', this server uses '", rule().name(), "'");
  Image out;
  out.step_lr.resize(stamped_ ? r.GetCount<float>() : 0);
  r.GetSpan<float>(std::span<float>(out.step_lr));
  const size_t stride = dim() + state_size_;
  const size_t count = r.GetCount(sizeof(int64_t) + stride * sizeof(float));
  out.keys.resize(count);
  out.data.resize(count * stride);
  for (size_t i = 0; i < count; ++i) {
    out.keys[i] = r.Get<int64_t>();
    r.GetSpan<float>(std::span<float>(out.data).subspan(i * stride, stride));
  }
  FLOTILLA_CHECK(r.done(), Corruption, what, ": trailing bytes after table '", name(), "'");
  return out;
}

// Replaces every row with `rows` (keys unique), under all shard locks.
void SparseTable::Install(std::span<const int64_t> keys, std::span<const float> data,
                          const std::string& what) {
  const size_t stride = dim() + state_size_;
  std::vector<Shard> loaded(shards_.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    Shard& shard = loaded[ShardIndex(KeyIndex::Hash(keys[i]))];
    FLOTILLA_CHECK(shard.slot.FindOrInsert(keys[i], shard.keys.size()).second, Corruption, what,
                   ": key ", keys[i], " appears twice in table '", name(), "'");
    shard.keys.push_back(keys[i]);
    shard.data.insert(shard.data.end(), data.begin() + i * stride, data.begin() + (i + 1) * stride);
  }
  for (size_t i = 0; i < shards_.size(); ++i) {
    std::lock_guard<std::mutex> lock(shards_[i]->mu);
    shards_[i]->slot = std::move(loaded[i].slot);
    shards_[i]->keys = std::move(loaded[i].keys);
    shards_[i]->data = std::move(loaded[i].data);
    shards_[i]->pending.clear();
  }
}

void SparseTable::Deserialize(std::string_view image, const std::string& what) {
  Image parsed = ParseImage(image, what);
  Install(parsed.keys, parsed.data, what);
  std::unique_lock<std::shared_mutex> lock(history_mu_);
  step_lr_ = std::move(parsed.step_lr);
  step_ = static_cast<int64_t>(step_lr_.size());
}

void SparseTable::DeserializeResharded(std::span<const std::string> images,
                                       const std::function<bool(int64_t)>& keep,
                                       const std::string& what) {
  const size_t stride = dim() + state_size_;
  std::vector<int64_t> keys;
  std::vector<float> data;
  for (size_t j = 0; j < images.size(); ++j) {
    Image parsed = ParseImage(images[j], StrCat(what, " (image ", j, ")"));
    const int64_t steps = static_cast<int64_t>(parsed.step_lr.size());
    for (size_t i = 0; i < parsed.keys.size(); ++i) {
      if (!keep(parsed.keys[i])) continue;
      float* row = parsed.data.data() + i * stride;
      if (stamped_) {  // current as of its server's last step, then restamped
        const int64_t stamp = StampOf(row);
        if (stamp < steps) {
          config_.rule->Advance(row, row + dim(), dim(),
                                std::span<const float>(parsed.step_lr).subspan(stamp, steps - stamp));
        }
        SetStamp(row, 0);
      }
      keys.push_back(parsed.keys[i]);
      data.insert(data.end(), row, row + stride);
    }
  }
  Install(keys, data, what);
  std::unique_lock<std::shared_mutex> lock(history_mu_);
  step_lr_.clear();
  step_ = 0;
}

}  // namespace flotilla::ps
