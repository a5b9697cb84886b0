// DistributedStrategy: the knobs of distributed training, with Paddle's
// field names and defaults, wrapped for Paddle-style use:
//
//   fleet::DistributedStrategy s;                 // Paddle's defaults
//   s.set_nccl_comm_num(2);                       // the old name works
//   s.Set("fuse_all_reduce_ops", true);           // any field by its path
//   s.Set("localsgd_configs.k_steps", 4);
//   auto t = fleet::DistributedStrategy::FromTextFile("strategy.prototxt");
//
// The fields are those of src/fleet/distributed_strategy.proto (a message
// private to fleet): a scalar or list field of the strategy ("a_sync"), or
// of one of its config groups ("a_sync_configs.k_steps"). Fields() lists
// them, so bindings reflect them instead of re-declaring each one.
//
// A value type; not thread-safe for concurrent mutation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace flotilla::fleet {

namespace proto {
class DistributedStrategy;  // private to fleet: src/fleet/strategy_proto.h
}

// What a strategy field holds. kInt covers the 32- and 64-bit fields, kFloat
// the float ones; kGroup is a config group (localsgd_configs, ...), whose
// fields are named "group.field".
enum class StrategyFieldType { kBool, kInt, kFloat, kString, kStringList, kFloatList, kGroup };

// One field's value, by StrategyFieldType: bool, int64_t, double,
// std::string, a list of strings, a list of numbers.
using StrategyValue =
    std::variant<bool, int64_t, double, std::string, std::vector<std::string>, std::vector<double>>;

struct StrategyField {
  std::string name;  // "k_steps", within its group
  StrategyFieldType type;
};

class DistributedStrategy {
 public:
  DistributedStrategy();  // Paddle's defaults
  ~DistributedStrategy();
  DistributedStrategy(const DistributedStrategy& other);
  DistributedStrategy& operator=(const DistributedStrategy& other);
  DistributedStrategy(DistributedStrategy&& other);  // leaves `other` at the defaults
  DistributedStrategy& operator=(DistributedStrategy&& other) noexcept;

  // Parses protobuf text format. Throws InvalidArgument naming the unknown
  // field (or the line and column of a syntax error) and the source; and for
  // values out of range (see Validate).
  static DistributedStrategy FromText(const std::string& text, const std::string& what = "strategy");
  // Throws NotFound naming `path` when it cannot be read.
  static DistributedStrategy FromTextFile(const std::string& path);
  std::string ToText() const;

  // ---- every field, by path ("comm_num", "a_sync_configs.k_steps") ----
  // Each throws InvalidArgument naming `path` when no field has it.

  // The fields of the strategy (`group` empty) or of one config group, in
  // declaration order.
  static std::vector<StrategyField> Fields(std::string_view group = {});
  static StrategyFieldType Type(std::string_view path);
  // True when the field was given a value, even its default (a group: any
  // of its fields; a list: any element).
  bool Has(std::string_view path) const;
  // The field's value (its default when not given). Throws InvalidArgument
  // for a group: read its fields.
  StrategyValue Get(std::string_view path) const;
  // Typed reads; each throws InvalidArgument when the field holds another
  // type.
  bool GetBool(std::string_view path) const;
  int64_t GetInt(std::string_view path) const;
  double GetFloat(std::string_view path) const;
  std::string GetString(std::string_view path) const;
  std::vector<std::string> GetStrings(std::string_view path) const;
  // Sets a scalar or list field. An integer may be given for a number
  // field. Throws InvalidArgument naming the field and the type it holds
  // when `value` has another type, or an integer is outside the field's
  // range, or `path` is a group. Ranges are checked by Validate.
  void Set(std::string_view path, const StrategyValue& value);
  // The literals a caller writes: Set("a_sync", true), Set("k_steps", 4).
  void Set(std::string_view path, bool value) { Set(path, StrategyValue(value)); }
  void Set(std::string_view path, int value) { Set(path, StrategyValue(int64_t{value})); }
  void Set(std::string_view path, int64_t value) { Set(path, StrategyValue(value)); }
  void Set(std::string_view path, double value) { Set(path, StrategyValue(value)); }
  void Set(std::string_view path, const char* value) { Set(path, StrategyValue(std::string(value))); }
  // Back to the default (a group: every field of it).
  void Clear(std::string_view path);

  // ---- the fields fleet's passes apply, named ----
  // comm_num, falling back to nccl_comm_num when only that is set.
  int comm_num() const;
  void set_comm_num(int n) { Set("comm_num", n); }
  int nccl_comm_num() const { return comm_num(); }
  void set_nccl_comm_num(int n) { Set("comm_num", n); }

  bool fuse_all_reduce_ops() const { return GetBool("fuse_all_reduce_ops"); }
  void set_fuse_all_reduce_ops(bool v) { Set("fuse_all_reduce_ops", v); }
  int fuse_grad_size_in_MB() const { return static_cast<int>(GetInt("fuse_grad_size_in_MB")); }
  void set_fuse_grad_size_in_MB(int mb) { Set("fuse_grad_size_in_MB", mb); }
  bool use_hierarchical_allreduce() const { return GetBool("use_hierarchical_allreduce"); }
  void set_use_hierarchical_allreduce(bool v) { Set("use_hierarchical_allreduce", v); }
  bool localsgd() const { return GetBool("localsgd"); }
  void set_localsgd(bool v) { Set("localsgd", v); }
  bool gradient_merge() const { return GetBool("gradient_merge"); }
  void set_gradient_merge(bool v) { Set("gradient_merge", v); }
  bool sync_batch_norm() const { return GetBool("sync_batch_norm"); }
  void set_sync_batch_norm(bool v) { Set("sync_batch_norm", v); }
  // "none" (default) or "step": see Fleet::run_step.
  std::string fault_tolerance() const { return GetString("fault_tolerance"); }
  void set_fault_tolerance(const std::string& mode) { Set("fault_tolerance", StrategyValue(mode)); }
  bool a_sync() const { return GetBool("a_sync"); }
  void set_a_sync(bool v) { Set("a_sync", v); }

  // Decides, for every field, what applying this strategy does with it
  // (fleet's distributed_optimizer calls it; the Python strategy reflects it):
  // - applied: the fields Flotilla implements. Throws InvalidArgument naming
  //   the first one out of range (comm_num < 1, fuse_grad_size_in_MB < 1,
  //   k_steps < 1, begin_step < 1, exec_strategy counts < 1, localsgd
  //   together with gradient_merge, sparse_table_configs' table_class other
  //   than memory / ssd, admit_probability outside (0, 1], negative counts,
  //   heter_configs.pipeline_depth < 1);
  // - hints (auto, cudnn_*, conv_workspace_size_limit, recompute,
  //   build_strategy's graph passes, ...): no effect on the CPU
  //   backend and the same results; see Hints();
  // - refused: Paddle options that would change the result and that
  //   Flotilla lacks (amp, dgc, lars, lamb, pipeline, sharding, ...,
  //   fetch_frequency != 1, exec_strategy.use_thread_barrier, the
  //   a_sync_configs fields its communicator lacks). Set away from their
  //   default, throws Unimplemented naming the first one, its value and the
  //   nearest Flotilla option. Their configs (amp_configs, ...) are kept
  //   and never refused.
  // FromText checks the ranges only, so a Paddle prototxt loads whatever it
  // holds.
  void Validate() const;

  // The checks Paddle's setters make when `field` is assigned (the others
  // wait for Validate): last_comm_group_size_MB must be > 0. Throws
  // InvalidArgument naming the field and its value.
  void CheckOnAssign(const std::string& field) const;

  // One message per hint field set away from its default, naming the field,
  // its value and why it has no effect. Never throws.
  std::vector<std::string> Hints() const;
  // The Hints() no call of NewHints() in this process has returned yet:
  // each hint is given once per process. Thread-safe.
  std::vector<std::string> NewHints() const;

  // FLOTILLA_FAULT_TOLERANCE (what `flotilla launch --fault_tolerance`
  // exports) sets fault_tolerance unless the strategy sets it.
  // Paddle's FLAGS_fuse_parameter_memory_size (MB of gradients per fused
  // all-reduce) sets fuse_grad_size_in_MB, rounded up, unless the strategy
  // sets it. Throws InvalidArgument naming the variable when it is not a
  // positive number.
  void HonourPaddleFlags();

 private:
  // Fleet's own code reads the message through src/fleet/strategy_proto.h.
  friend const proto::DistributedStrategy& StrategyProto(const DistributedStrategy& s);
  friend proto::DistributedStrategy& MutableStrategyProto(DistributedStrategy& s);

  std::unique_ptr<proto::DistributedStrategy> proto_;  // never null
};

}  // namespace flotilla::fleet
