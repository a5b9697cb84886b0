#include "flotilla/fleet/distributed_strategy.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"

namespace flotilla::fleet {

namespace {

// Keeps the parser's first error ("... has no field named \"x\"") with its
// position, for the exception.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (message_.empty()) message_ = StrCat("line ", line + 1, ":", column + 1, ": ", message);
  }
  void AddWarning(int line, int column, const std::string& message) override {}
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

void CheckAtLeast(int64_t value, int64_t min, const char* field) {
  FLOTILLA_CHECK(value >= min, InvalidArgument, "DistributedStrategy.", field, "=", value,
                 " must be at least ", min);
}

// The a_sync_configs fields of Paddle's communicator that Flotilla's does not
// have: set to anything but their default, they are refused by name rather
// than ignored (k_steps, max_merge_var_num, send_queue_size and
// independent_recv_thread are applied).
void RefuseUnappliedAsyncFields(const proto::AsyncConfig& a) {
  const proto::AsyncConfig defaults;
  const auto refuse = [](bool is_default, const char* field, const std::string& value,
                         const char* instead) {
    FLOTILLA_CHECK(is_default, Unimplemented, "DistributedStrategy.a_sync_configs.", field, "=", value,
                   " is not applied by Flotilla's communicator; ", instead);
  };
  refuse(a.min_send_grad_num_before_recv() == defaults.min_send_grad_num_before_recv(),
         "min_send_grad_num_before_recv", std::to_string(a.min_send_grad_num_before_recv()),
         "leave it at 1 (a trainer receives after each send round)");
  refuse(a.thread_pool_size() == defaults.thread_pool_size(), "thread_pool_size",
         std::to_string(a.thread_pool_size()), "leave it at 1 (one send thread per trainer)");
  refuse(a.send_wait_times() == defaults.send_wait_times(), "send_wait_times",
         std::to_string(a.send_wait_times()), "leave it at 1; nearest: max_merge_var_num");
  refuse(a.runtime_split_send_recv() == defaults.runtime_split_send_recv(), "runtime_split_send_recv",
         a.runtime_split_send_recv() ? "true" : "false",
         "leave it false (tables are split across servers when the program is transpiled)");
  refuse(a.launch_barrier() == defaults.launch_barrier(), "launch_barrier",
         a.launch_barrier() ? "true" : "false", "leave it true (trainers always wait for the servers)");
  refuse(a.lr_decay_steps() == defaults.lr_decay_steps(), "lr_decay_steps",
         std::to_string(a.lr_decay_steps()),
         "leave it at 10 (servers apply the learning rate the trainers' program computes)");
}

}  // namespace

DistributedStrategy::DistributedStrategy(proto::DistributedStrategy p) : proto_(std::move(p)) {}

DistributedStrategy DistributedStrategy::FromText(const std::string& text, const std::string& what) {
  proto::DistributedStrategy p;
  FirstError errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &p)) {
    FLOTILLA_THROW(InvalidArgument, "cannot parse ", what, " as a DistributedStrategy: ",
                   errors.message());
  }
  DistributedStrategy s(std::move(p));
  s.Validate();
  return s;
}

DistributedStrategy DistributedStrategy::FromTextFile(const std::string& path) {
  return FromText(ReadFileAtMost(path, 16u << 20, "strategy file"), path);
}

std::string DistributedStrategy::ToText() const {
  std::string out;
  google::protobuf::TextFormat::PrintToString(proto_, &out);
  return out;
}

int DistributedStrategy::comm_num() const {
  if (!proto_.has_comm_num() && proto_.has_nccl_comm_num()) return proto_.nccl_comm_num();
  return proto_.comm_num();
}

void DistributedStrategy::Validate() const {
  CheckAtLeast(comm_num(), 1, "comm_num");
  CheckAtLeast(proto_.fuse_grad_size_in_mb(), 1, "fuse_grad_size_in_MB");
  CheckAtLeast(proto_.hierarchical_allreduce_inter_nranks(), 0, "hierarchical_allreduce_inter_nranks");
  CheckAtLeast(proto_.localsgd_configs().k_steps(), 1, "localsgd_configs.k_steps");
  CheckAtLeast(proto_.localsgd_configs().begin_step(), 1, "localsgd_configs.begin_step");
  CheckAtLeast(proto_.gradient_merge_configs().k_steps(), 1, "gradient_merge_configs.k_steps");
  FLOTILLA_CHECK(!(proto_.localsgd() && proto_.gradient_merge()), InvalidArgument,
                 "DistributedStrategy: localsgd and gradient_merge cannot both be on");
  const proto::SparseTableConfigs& t = proto_.sparse_table_configs();
  FLOTILLA_CHECK(t.table_class() == "memory" || t.table_class() == "ssd", InvalidArgument,
                 "DistributedStrategy: sparse_table_configs.table_class '", t.table_class(),
                 "' is not memory or ssd");
  FLOTILLA_CHECK(t.table_class() != "ssd" || t.memory_budget_mb() > 0, InvalidArgument,
                 "DistributedStrategy: sparse_table_configs.table_class ssd needs memory_budget_mb > 0");
  FLOTILLA_CHECK(t.admit_probability() > 0 && t.admit_probability() <= 1, InvalidArgument,
                 "DistributedStrategy: sparse_table_configs.admit_probability ", t.admit_probability(),
                 " is outside (0, 1]");
  CheckAtLeast(t.admit_count(), 0, "sparse_table_configs.admit_count");
  CheckAtLeast(proto_.heter_configs().pipeline_depth(), 1, "heter_configs.pipeline_depth");
  CheckAtLeast(t.delete_after_unseen_passes(), 0, "sparse_table_configs.delete_after_unseen_passes");
  RefuseUnappliedAsyncFields(proto_.a_sync_configs());
}

}  // namespace flotilla::fleet
