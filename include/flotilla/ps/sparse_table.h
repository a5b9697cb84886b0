// SparseTable: rows of a [*, dim] embedding keyed by int64 ids, created on
// first pull with the table's initializer; optionally admitted only after
// repeated sightings, dropped by Shrink when stale (Paddle's CTR accessor),
// and kept partly on local disk (table class ssd).
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

class ByteReader;

// Which keys get a row and which rows a Shrink drops (what Paddle's CTR
// accessor and its CountFilterEntry / ProbabilityEntry decide). A key is
// *seen* when a pull names it. Every decision is counted (SparseTableCounters).
struct SparseAccessorConfig {
  // Admission: a key without a row gets one at its admit_count-th sighting
  // (0 or 1: at once), or, with admit_probability < 1, at each sighting
  // with that probability. Until then pulls return zeros for it and
  // pushes to it are dropped.
  int admit_count = 0;
  float admit_probability = 1.0f;
  // Shrink: a row not seen for this many passes (Shrink calls) is dropped
  // (0: never); so is a row whose score, after decay, is below
  // delete_threshold (0: never). score = nonclk_coeff (show - click) +
  // click_coeff click; show and click are multiplied by
  // show_click_decay_rate at every Shrink.
  int delete_after_unseen_passes = 0;
  float delete_threshold = 0.0f;
  float show_click_decay_rate = 1.0f;
  float nonclk_coeff = 0.1f;
  float click_coeff = 1.0f;

  bool admits_all() const { return admit_count <= 1 && admit_probability >= 1.0f; }
  // Rows carry show/click/last-seen statistics unless the accessor is off.
  bool keeps_stats() const {
    return !admits_all() || delete_after_unseen_passes > 0 || delete_threshold > 0.0f;
  }
};

// memory: every row in memory. ssd: at most memory_budget_bytes of rows in
// memory, the least recently used rest in a RocksDB database under
// ssd_path (Paddle's SSDSparseTable); rows move back on access.
enum class SparseTableClass { kMemory, kSsd };
// "memory" | "ssd"; throws InvalidArgument naming the string.
SparseTableClass ParseSparseTableClass(const std::string& name);

struct SparseTableConfig {
  std::string name;
  int64_t dim = 0;
  std::shared_ptr<const UpdateRule> rule;  // required
  InitializerConfig initializer;           // default: zeros
  int num_shards = 16;  // internal lock shards; more shards, less contention
  SparseAccessorConfig accessor;
  SparseTableClass table_class = SparseTableClass::kMemory;
  // ssd: the table's own database directory (wiped on construction,
  // removed on destruction), and the bytes of rows (with their index)
  // kept in memory.
  std::string ssd_path;
  int64_t memory_budget_bytes = 0;
};

// What a table did, for metrics. Counts since construction.
struct SparseTableCounters {
  int64_t rows = 0;            // rows now (memory + disk)
  int64_t memory_rows = 0;     // rows now in memory
  int64_t admitted = 0;        // rows created
  int64_t refused_sightings = 0;  // pulled keys answered with zeros (not admitted yet)
  int64_t dropped_pushes = 0;  // pushed keys without a row (gradient dropped)
  int64_t candidates = 0;      // keys counted towards admission, without a row
  int64_t shrunk = 0;          // rows dropped by Shrink
  int64_t spilled = 0;         // rows written to disk (ssd)
  int64_t loaded = 0;          // rows read back from disk (ssd)
};

// The rows one server holds. Rows are split over internal shards by a hash
// of the key, each shard with its own mutex, so pulls and pushes of
// different keys run in parallel. Every method is thread-safe. Spans of
// values are row-major [keys.size(), dim]; a wrong length throws
// InvalidArgument. Keys may repeat; repeated keys are applied in order.
// Disk errors (ssd) throw Unavailable naming the database path.
class SparseTable {
 public:
  explicit SparseTable(SparseTableConfig config);
  ~SparseTable();
  SparseTable(const SparseTable&) = delete;
  SparseTable& operator=(const SparseTable&) = delete;

  const std::string& name() const { return config_.name; }
  int64_t dim() const { return config_.dim; }
  const UpdateRule& rule() const { return *config_.rule; }
  const SparseTableConfig& config() const { return config_; }
  // Number of rows created so far (and not dropped), in memory and on disk.
  int64_t size() const;
  SparseTableCounters counters() const;

  // Copies rows into out, creating missing rows with the initializer (or,
  // under an admission rule, counting a sighting: keys not admitted read
  // as zeros).
  void Pull(std::span<const int64_t> keys, std::span<float> out);
  // Applies the update rule to each row now (async mode) at learning rate
  // `lr` (unset: the rule's constant rate); missing rows are created first
  // (under an admission rule their gradients are dropped instead). Tables
  // that keep statistics also take rows of dim + 2: the gradient, then the
  // key's show and click counts, added to the row's statistics.
  void Push(std::span<const int64_t> keys, std::span<const float> grads,
            std::optional<float> lr = {});
  // Adds to the pending per-row sums (sync mode); see ApplyPending. Show
  // and click counts (rows of dim + 2) are added at once.
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
  // Overwrites rows (state kept or created; admission does not apply).
  void Set(std::span<const int64_t> keys, std::span<const float> values);
  // Ends a pass: decays show/click and drops the rows (and admission
  // counters) the accessor says are stale. Returns the rows dropped.
  int64_t Shrink();
  // Statistics of a row (tables that keep them): nullopt without a row.
  struct RowStats {
    float show = 0, click = 0;
    int64_t unseen_passes = 0;  // passes that ended since it was last seen
  };
  std::optional<RowStats> StatsOf(int64_t key);

  // Binary image of all rows (values and state), sorted by key, and its
  // inverse (replacing all rows). Deserialize throws Corruption naming
  // `what` when the image does not match this table. Memory tables only:
  // ssd tables save and load with SaveTo / LoadFrom.
  std::string Serialize() const;
  void Deserialize(std::string_view image, const std::string& what);
  // Rows from the images every server of a differently sized job saved,
  // keeping those `keep` accepts (the keys this server now holds). Rows of
  // an advancing rule are first brought to their server's last step; the
  // step count then starts afresh.
  void DeserializeResharded(std::span<const std::string> images,
                            const std::function<bool(int64_t)>& keep, const std::string& what);

  // Saves every row under `path` (a file for memory tables; for ssd tables
  // a header file plus a database directory `<path>.db`), written to
  // temporary names and renamed. LoadFrom replaces all rows with a save of
  // the same table made by SaveTo on the same number of servers;
  // LoadResharded keeps the rows `keep` accepts from every server's save.
  // Throws as Deserialize; NotFound when `path` is missing.
  void SaveTo(const std::string& path) const;
  void LoadFrom(const std::string& path);
  void LoadResharded(std::span<const std::string> paths, const std::function<bool(int64_t)>& keep,
                     const std::string& what);

 private:
  struct Shard;
  struct Image;
  class Disk;
  enum class Access { kCreate, kSighting, kExisting };
  Image ParseImage(std::string_view image, const std::string& what) const;
  void Install(std::span<const int64_t> keys, std::span<const float> data, const std::string& what);
  static constexpr int64_t kStampFloats = 2;  // an int64 step per row (advancing rules)
  static constexpr int64_t kStatFloats = 3;   // show, click, last pass seen (accessor)
  static constexpr int64_t kNoCatchUp = -1;
  size_t ShardIndex(uint64_t hash) const;
  size_t Stride() const { return static_cast<size_t>(config_.dim + state_size_); }
  int64_t StampOf(const float* row) const;
  void SetStamp(float* row, int64_t step) const;
  float* StatsPtr(float* row) const { return row + config_.dim + rule_state_ + (stamped_ ? kStampFloats : 0); }
  void MarkSeen(float* row) const;
  void AddStats(float* row, const float* show_click) const;
  void CatchUp(float* row, int64_t now) const;
  int64_t Now() const;  // the step rows catch up to on access, or kNoCatchUp
  // Starts a step at rate `lr` (advancing rules): returns its number.
  int64_t BeginStep(float lr);
  void InitRow(int64_t key, float* row) const;
  uint32_t AppendRow(Shard& shard, int64_t key) const;
  bool Admit(Shard& shard, int64_t key);
  void ResolveMissing(Shard& shard, std::span<const int64_t> keys, std::span<const uint32_t> order,
                      std::span<int64_t> slot, Access access);
  // Every shard's lock, in shard order (saves, loads, shrinking the disk).
  std::vector<std::unique_lock<std::mutex>> LockAll() const;
  void InitDisk();
  void MakeRoom(Shard& shard, size_t incoming);
  static void EmptyShard(Shard& shard);
  void InstallOnDisk(const std::function<void(const std::function<void(int64_t, const float*)>&)>& rows);
  void Compact(Shard& shard, const std::vector<bool>& drop) const;
  bool Stale(float* row, int32_t pass) const;  // decays its stats first
  int64_t ShrinkDisk(int32_t pass);
  template <typename Fn, typename Refused>
  void ForEachShard(std::span<const int64_t> keys, int64_t now, Access access, Fn&& fn,
                    Refused&& refused);
  template <typename Fn>
  void ForEachRow(std::span<const int64_t> keys, int64_t now, Access access, Fn&& fn);
  // Rows of `width` floats: the gradient, then (width dim + 2) show, click.
  void ApplyGrads(std::span<const int64_t> keys, const float* grads, size_t width, float rate,
                  int64_t step);
  void CheckSpan(size_t keys, size_t values, const char* op) const;
  // The row width of pushed values: dim, or dim + 2 with show and click.
  size_t PushWidth(size_t keys, size_t values, const char* op) const;
  // A save's header: name, dim, rule, state size, step history, pass.
  std::string Header() const;
  // Checks a header against this table; returns its step history and pass.
  std::pair<std::vector<float>, int32_t> ParseHeader(ByteReader& r) const;

  SparseTableConfig config_;
  int64_t rule_state_ = 0;  // floats of rule state per row
  bool stamped_ = false;    // the rule advances: rows carry a step stamp
  bool stats_ = false;      // rows carry accessor statistics
  int64_t state_size_ = 0;  // floats after a row's values: rule state, stamp, stats
  size_t shard_row_budget_ = 0;  // ssd: rows a shard keeps in memory
  // Steps so far (pushes in async mode, rounds in sync mode) and each
  // step's learning rate, for advancing rules: a row that missed steps
  // catches up at their rates. step_ == step_lr_.size(), both written
  // under history_mu_; step_ is read without it.
  std::atomic<int64_t> step_{0};
  mutable std::shared_mutex history_mu_;
  std::vector<float> step_lr_;  // guarded by history_mu_
  std::mutex pending_mu_;
  std::optional<float> pending_lr_;  // guarded by pending_mu_
  std::atomic<int32_t> pass_{0};  // Shrink calls so far
  std::unique_ptr<Disk> disk_;    // ssd only
  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace flotilla::ps
