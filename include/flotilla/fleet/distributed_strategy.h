// DistributedStrategy: the knobs of distributed training, a protobuf message
// (src/fleet/distributed_strategy.proto) with Paddle's field names and
// defaults, wrapped for Paddle-style use:
//
//   fleet::DistributedStrategy s;                 // Paddle's defaults
//   s.set_nccl_comm_num(2);                       // the old name works
//   s->set_fuse_all_reduce_ops(true);             // any proto field via ->
//   s->mutable_localsgd_configs()->set_k_steps(4);
//   auto t = fleet::DistributedStrategy::FromTextFile("strategy.prototxt");
//
// A value type; not thread-safe for concurrent mutation.
#pragma once

#include <string>
#include <vector>

#include "fleet/distributed_strategy.pb.h"

namespace flotilla::fleet {

class DistributedStrategy {
 public:
  DistributedStrategy() = default;
  explicit DistributedStrategy(proto::DistributedStrategy p);

  // Parses protobuf text format. Throws InvalidArgument naming the unknown
  // field (or the line and column of a syntax error) and the source; and for
  // values out of range (see Validate).
  static DistributedStrategy FromText(const std::string& text, const std::string& what = "strategy");
  // Throws NotFound naming `path` when it cannot be read.
  static DistributedStrategy FromTextFile(const std::string& path);
  std::string ToText() const;

  proto::DistributedStrategy* operator->() { return &proto_; }
  const proto::DistributedStrategy* operator->() const { return &proto_; }
  const proto::DistributedStrategy& proto() const { return proto_; }

  // comm_num, falling back to nccl_comm_num when only that is set.
  int comm_num() const;
  void set_comm_num(int n) { proto_.set_comm_num(n); }
  int nccl_comm_num() const { return comm_num(); }
  void set_nccl_comm_num(int n) { proto_.set_comm_num(n); }

  bool fuse_all_reduce_ops() const { return proto_.fuse_all_reduce_ops(); }
  void set_fuse_all_reduce_ops(bool v) { proto_.set_fuse_all_reduce_ops(v); }
  int fuse_grad_size_in_MB() const { return proto_.fuse_grad_size_in_mb(); }
  void set_fuse_grad_size_in_MB(int mb) { proto_.set_fuse_grad_size_in_mb(mb); }
  bool use_hierarchical_allreduce() const { return proto_.use_hierarchical_allreduce(); }
  void set_use_hierarchical_allreduce(bool v) { proto_.set_use_hierarchical_allreduce(v); }
  bool localsgd() const { return proto_.localsgd(); }
  void set_localsgd(bool v) { proto_.set_localsgd(v); }
  const proto::LocalSGDConfig& localsgd_configs() const { return proto_.localsgd_configs(); }
  proto::LocalSGDConfig& localsgd_configs() { return *proto_.mutable_localsgd_configs(); }
  bool gradient_merge() const { return proto_.gradient_merge(); }
  void set_gradient_merge(bool v) { proto_.set_gradient_merge(v); }
  const proto::GradientMergeConfig& gradient_merge_configs() const { return proto_.gradient_merge_configs(); }
  proto::GradientMergeConfig& gradient_merge_configs() { return *proto_.mutable_gradient_merge_configs(); }
  const proto::ExecutionStrategy& exec_strategy() const { return proto_.exec_strategy(); }
  proto::ExecutionStrategy& exec_strategy() { return *proto_.mutable_exec_strategy(); }
  bool sync_batch_norm() const { return proto_.sync_batch_norm(); }
  void set_sync_batch_norm(bool v) { proto_.set_sync_batch_norm(v); }
  // "none" (default) or "step": see Fleet::run_step.
  const std::string& fault_tolerance() const { return proto_.fault_tolerance(); }
  void set_fault_tolerance(const std::string& mode) { proto_.set_fault_tolerance(mode); }
  bool a_sync() const { return proto_.a_sync(); }
  void set_a_sync(bool v) { proto_.set_a_sync(v); }
  const proto::AsyncConfig& a_sync_configs() const { return proto_.a_sync_configs(); }
  proto::AsyncConfig& a_sync_configs() { return *proto_.mutable_a_sync_configs(); }
  const proto::SparseTableConfigs& sparse_table_configs() const { return proto_.sparse_table_configs(); }
  proto::SparseTableConfigs& sparse_table_configs() { return *proto_.mutable_sparse_table_configs(); }
  const proto::HeterConfigs& heter_configs() const { return proto_.heter_configs(); }
  proto::HeterConfigs& heter_configs() { return *proto_.mutable_heter_configs(); }

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
  proto::DistributedStrategy proto_;
};

}  // namespace flotilla::fleet
