// SparseTable: rows of a [*, dim] embedding keyed by int64 ids, created on
// first pull with the table's initializer.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "flotilla/ps/initializer.h"
#include "flotilla/ps/update_rule.h"

namespace flotilla::ps {

struct SparseTableConfig {
  std::string name;
  int64_t dim = 0;
  std::shared_ptr<const UpdateRule> rule;  // required
  InitializerConfig initializer;           // default: zeros
  int num_shards = 16;  // internal lock shards; more shards, less contention
};

// The rows one server holds. Rows are split over internal shards by a hash
// of the key, each shard with its own mutex, so pulls and pushes of
// different keys run in parallel. Every method is thread-safe. Spans of
// values are row-major [keys.size(), dim]; a wrong length throws
// InvalidArgument. Keys may repeat; repeated keys are applied in order.
class SparseTable {
 public:
  explicit SparseTable(SparseTableConfig config);
  ~SparseTable();
  SparseTable(const SparseTable&) = delete;
  SparseTable& operator=(const SparseTable&) = delete;

  const std::string& name() const { return config_.name; }
  int64_t dim() const { return config_.dim; }
  const UpdateRule& rule() const { return *config_.rule; }
  // Number of rows created so far.
  int64_t size() const;

  // Copies rows into out, creating missing rows with the initializer.
  void Pull(std::span<const int64_t> keys, std::span<float> out);
  // Applies the update rule to each row now (async mode) at learning rate
  // `lr` (unset: the rule's constant rate); missing rows are created first.
  void Push(std::span<const int64_t> keys, std::span<const float> grads,
            std::optional<float> lr = {});
  // Adds to the pending per-row sums (sync mode); see ApplyPending.
  void Accumulate(std::span<const int64_t> keys, std::span<const float> grads,
                  std::optional<float> lr = {});
  // Applies (pending sum / divisor) to every row that received gradients
  // since the last call, at the rate the last Accumulate named, then clears
  // the sums. Each call is one step (rows of an advancing rule that
  // received nothing catch up when next touched).
  void ApplyPending(int divisor);
  bool HasPending() const;
  // row += delta (GEO).
  void PushDelta(std::span<const int64_t> keys, std::span<const float> deltas);
  // Overwrites rows (state kept or created).
  void Set(std::span<const int64_t> keys, std::span<const float> values);

  // Binary image of all rows (values and state), sorted by key, and its
  // inverse (replacing all rows). Deserialize throws Corruption naming
  // `what` when the image does not match this table.
  std::string Serialize() const;
  void Deserialize(std::string_view image, const std::string& what);
  // Rows from the images every server of a differently sized job saved,
  // keeping those `keep` accepts (the keys this server now holds). Rows of
  // an advancing rule are first brought to their server's last step; the
  // step count then starts afresh.
  void DeserializeResharded(std::span<const std::string> images,
                            const std::function<bool(int64_t)>& keep, const std::string& what);

 private:
  struct Shard;
  struct Image;
  Image ParseImage(std::string_view image, const std::string& what) const;
  void Install(std::span<const int64_t> keys, std::span<const float> data, const std::string& what);
  static constexpr int64_t kStampFloats = 2;  // an int64 step per row (advancing rules)
  static constexpr int64_t kNoCatchUp = -1;
  size_t ShardIndex(uint64_t hash) const;
  int64_t StampOf(const float* row) const;
  void SetStamp(float* row, int64_t step) const;
  void CatchUp(float* row, int64_t now) const;
  int64_t Now() const;  // the step rows catch up to on access, or kNoCatchUp
  // Starts a step at rate `lr` (advancing rules): returns its number.
  int64_t BeginStep(float lr);
  uint32_t SlotOf(Shard& shard, int64_t key, uint64_t hash) const;
  void AppendRow(Shard& shard, int64_t key) const;
  std::span<float> RowOf(Shard& shard, int64_t key) const;
  Shard& ShardOf(int64_t key) const;
  template <typename Fn>
  void ForEachShard(std::span<const int64_t> keys, int64_t now, Fn&& fn);
  template <typename Fn>
  void ForEachRow(std::span<const int64_t> keys, int64_t now, Fn&& fn);
  void CheckSpan(size_t keys, size_t values, const char* op) const;

  SparseTableConfig config_;
  int64_t rule_state_ = 0;  // floats of rule state per row
  bool stamped_ = false;    // the rule advances: rows carry a step stamp
  int64_t state_size_ = 0;  // floats after a row's values: rule state, then the stamp
  // Steps so far (pushes in async mode, rounds in sync mode) and each
  // step's learning rate, for advancing rules: a row that missed steps
  // catches up at their rates. step_ == step_lr_.size(), both written
  // under history_mu_; step_ is read without it.
  std::atomic<int64_t> step_{0};
  mutable std::shared_mutex history_mu_;
  std::vector<float> step_lr_;  // guarded by history_mu_
  std::mutex pending_mu_;
  std::optional<float> pending_lr_;  // guarded by pending_mu_
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace flotilla::ps
