#include "flotilla/fleet/distributed_strategy.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <set>

#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"
#include "fleet/strategy_proto.h"

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

namespace pb = google::protobuf;

// A Paddle field and what Flotilla tells a user who sets it away from its
// default: why it has no effect (a hint), or the nearest option (refused).
struct FieldRule {
  const char* path;
  const char* advice;
};

constexpr const char* kNoCudnn = "there is no cuDNN on the CPU backend";
constexpr const char* kNoGraphPass = "Flotilla runs the program's ops as built, in order";

// Hints: nothing on the CPU backend depends on them; results are the same.
constexpr FieldRule kHints[] = {
    {"auto", "Flotilla applies the fields set; nearest: set them yourself"},
    {"cudnn_exhaustive_search", kNoCudnn},
    {"conv_workspace_size_limit", kNoCudnn},
    {"cudnn_batchnorm_spatial_persistent", kNoCudnn},
    {"fuse_grad_size_in_TFLOPS", "buckets are sized by fuse_grad_size_in_MB"},
    {"last_comm_group_size_MB", "buckets are sized by fuse_grad_size_in_MB"},
    {"elastic", "nearest: the elastic options of `flotilla launch`"},
    {"find_unused_parameters", "a static program holds only the parameters it uses"},
    {"without_graph_optimization", kNoGraphPass},
    {"recompute", "activations are kept: the same results with more memory"},
    {"build_strategy.enable_sequential_execution", kNoGraphPass},
    {"build_strategy.fuse_elewise_add_act_ops", kNoGraphPass},
    {"build_strategy.fuse_bn_act_ops", kNoGraphPass},
    {"build_strategy.fuse_relu_depthwise_conv", kNoGraphPass},
    {"build_strategy.fuse_broadcast_ops", kNoGraphPass},
    {"build_strategy.fuse_all_optimizer_ops", kNoGraphPass},
    {"build_strategy.enable_inplace", "the executor reuses its temporaries by itself"},
    {"build_strategy.enable_backward_optimizer_op_deps", kNoGraphPass},
    {"build_strategy.cache_runtime_context", kNoGraphPass},
    {"build_strategy.enable_auto_fusion", kNoGraphPass},
    {"build_strategy.reduce_strategy", "every rank all-reduces every gradient (the same result)"},
    {"build_strategy.trainers_endpoints", "the role maker gives the ranks"},
    {"build_strategy.memory_optimize", "the executor reuses its temporaries by itself"},
    {"a_sync_configs.launch_barrier", "trainers always wait until the servers are up, which changes no result"},
};

// Refused: they would change what training computes, and Flotilla does not
// implement them.
constexpr FieldRule kRefused[] = {
    {"amp", "nearest: float32 training (the CPU backend has no float16 kernels)"},
    {"fp16_allreduce", "nearest: float32 all-reduce"},
    {"fp16_compress", "nearest: float32 all-reduce"},
    {"dgc", "nearest: fuse_all_reduce_ops with a larger fuse_grad_size_in_MB, or localsgd"},
    {"lars", "nearest: the Momentum optimizer"},
    {"lamb", "nearest: the Adam optimizer"},
    {"adaptive_localsgd", "nearest: localsgd with localsgd_configs"},
    {"pipeline", "nearest: data parallelism (fleet collective), with gradient_merge for micro-batches"},
    {"tensor_parallel", "nearest: data parallelism (fleet collective)"},
    {"sharding", "nearest: data parallelism (fleet collective)"},
    {"semi_auto", "nearest: data parallelism (fleet collective)"},
    {"heter_ccl_mode", "nearest: a heterogeneous parameter-server job (heter_configs)"},
    {"qat", "nearest: float32 training"},
    {"asp", "nearest: dense training"},
    {"hybrid_configs.mp_degree", "nearest: data parallelism (fleet collective)"},
    {"hybrid_configs.pp_degree", "nearest: data parallelism (fleet collective)"},
    {"hybrid_configs.sharding_degree", "nearest: data parallelism (fleet collective)"},
    {"trainer_desc_configs.dump_fields_path", "nearest: fetch the variables with Executor.run(fetch_list=...)"},
    {"trainer_desc_configs.dump_fields", "nearest: fetch the variables with Executor.run(fetch_list=...)"},
    {"trainer_desc_configs.dump_param", "nearest: save the parameters with fleet.save_persistables"},
    {"trainer_desc_configs.stat_var_names", "nearest: fetch the variables with Executor.run(fetch_list=...)"},
    {"fetch_frequency",
     "leave it at 1 and fetch every N steps in the training loop (exe.run without fetch_list copies "
     "nothing out)"},
    {"exec_strategy.use_thread_barrier", "leave it false (the executor runs ops on one thread)"},
    {"build_strategy.gradient_scale_strategy",
     "leave it at 0 (CoeffNumDevice: gradients are averaged over the ranks)"},
    // Paddle's communicator options that Flotilla's lacks (k_steps,
    // max_merge_var_num, send_queue_size and independent_recv_thread apply).
    {"a_sync_configs.min_send_grad_num_before_recv", "leave it at 1 (a trainer receives after each send round)"},
    {"a_sync_configs.thread_pool_size", "leave it at 1 (one send thread per trainer)"},
    {"a_sync_configs.send_wait_times", "leave it at 1; nearest: max_merge_var_num"},
    {"a_sync_configs.runtime_split_send_recv",
     "leave it false (tables are split across servers when the program is transpiled)"},
    {"a_sync_configs.lr_decay_steps",
     "leave it at 10 (servers apply the learning rate the trainers' program computes)"},
};

// The value of a scalar or repeated field as text; empty when it holds its
// default (explicitly set to the default counts as the default).
std::string ValueIfChanged(const proto::DistributedStrategy& root, const std::string& path) {
  auto [msg, f] = FieldAt(root, path);
  const pb::Reflection* r = msg->GetReflection();
  if (f->is_repeated()) {
    const int n = r->FieldSize(*msg, f);
    return n == 0 ? "" : StrCat("[", n, " values]");
  }
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_BOOL: {
      const bool v = r->GetBool(*msg, f);
      return v == f->default_value_bool() ? "" : (v ? "true" : "false");
    }
    case pb::FieldDescriptor::CPPTYPE_INT32: {
      const int32_t v = r->GetInt32(*msg, f);
      return v == f->default_value_int32() ? "" : std::to_string(v);
    }
    case pb::FieldDescriptor::CPPTYPE_FLOAT: {
      const float v = r->GetFloat(*msg, f);
      return v == f->default_value_float() ? "" : StrCat(v);
    }
    case pb::FieldDescriptor::CPPTYPE_STRING: {
      const std::string v = r->GetString(*msg, f);
      return v == f->default_value_string() ? "" : StrCat("'", v, "'");
    }
    default: FLOTILLA_THROW(Internal, "DistributedStrategy.", path, " has no rule for its type");
  }
}

// Every field with a rule of `rules` set away from its default, as
// (field, value, advice).
template <size_t N>
std::vector<std::array<std::string, 3>> Changed(const proto::DistributedStrategy& root, const FieldRule (&rules)[N]) {
  std::vector<std::array<std::string, 3>> out;
  for (const FieldRule& rule : rules) {
    std::string value = ValueIfChanged(root, rule.path);
    if (!value.empty()) out.push_back({rule.path, std::move(value), rule.advice});
  }
  return out;
}

void CheckRanges(const DistributedStrategy& s) {
  const proto::DistributedStrategy& p = StrategyProto(s);
  CheckAtLeast(s.comm_num(), 1, "comm_num");
  CheckAtLeast(p.fuse_grad_size_in_mb(), 1, "fuse_grad_size_in_MB");
  CheckAtLeast(p.hierarchical_allreduce_inter_nranks(), 0, "hierarchical_allreduce_inter_nranks");
  CheckAtLeast(p.localsgd_configs().k_steps(), 1, "localsgd_configs.k_steps");
  CheckAtLeast(p.localsgd_configs().begin_step(), 1, "localsgd_configs.begin_step");
  CheckAtLeast(p.gradient_merge_configs().k_steps(), 1, "gradient_merge_configs.k_steps");
  CheckAtLeast(p.exec_strategy().num_threads(), 1, "exec_strategy.num_threads");
  CheckAtLeast(p.exec_strategy().num_iteration_per_run(), 1, "exec_strategy.num_iteration_per_run");
  CheckAtLeast(p.exec_strategy().num_iteration_per_drop_scope(), 0, "exec_strategy.num_iteration_per_drop_scope");
  FLOTILLA_CHECK(!(p.localsgd() && p.gradient_merge()), InvalidArgument,
                 "DistributedStrategy: localsgd and gradient_merge cannot both be on");
  const proto::SparseTableConfigs& t = p.sparse_table_configs();
  FLOTILLA_CHECK(t.table_class() == "memory" || t.table_class() == "ssd", InvalidArgument,
                 "DistributedStrategy: sparse_table_configs.table_class '", t.table_class(),
                 "' is not memory or ssd");
  FLOTILLA_CHECK(t.table_class() != "ssd" || t.memory_budget_mb() > 0, InvalidArgument,
                 "DistributedStrategy: sparse_table_configs.table_class ssd needs memory_budget_mb > 0");
  FLOTILLA_CHECK(t.admit_probability() > 0 && t.admit_probability() <= 1, InvalidArgument,
                 "DistributedStrategy: sparse_table_configs.admit_probability ", t.admit_probability(),
                 " is outside (0, 1]");
  CheckAtLeast(t.admit_count(), 0, "sparse_table_configs.admit_count");
  CheckAtLeast(p.heter_configs().pipeline_depth(), 1, "heter_configs.pipeline_depth");
  CheckAtLeast(t.delete_after_unseen_passes(), 0, "sparse_table_configs.delete_after_unseen_passes");
  s.CheckOnAssign("last_comm_group_size_MB");
  FLOTILLA_CHECK(p.fault_tolerance() == "none" || p.fault_tolerance() == "step", InvalidArgument,
                 "DistributedStrategy: fault_tolerance '", p.fault_tolerance(),
                 "' is not none or step");
}

}  // namespace

const proto::DistributedStrategy& StrategyProto(const DistributedStrategy& s) { return *s.proto_; }
proto::DistributedStrategy& MutableStrategyProto(DistributedStrategy& s) { return *s.proto_; }

DistributedStrategy::DistributedStrategy() : proto_(std::make_unique<proto::DistributedStrategy>()) {}
DistributedStrategy::~DistributedStrategy() = default;
DistributedStrategy::DistributedStrategy(const DistributedStrategy& other)
    : proto_(std::make_unique<proto::DistributedStrategy>(*other.proto_)) {}
DistributedStrategy& DistributedStrategy::operator=(const DistributedStrategy& other) {
  if (this != &other) *proto_ = *other.proto_;
  return *this;
}
DistributedStrategy::DistributedStrategy(DistributedStrategy&& other)
    : proto_(std::make_unique<proto::DistributedStrategy>()) {
  proto_.swap(other.proto_);
}
DistributedStrategy& DistributedStrategy::operator=(DistributedStrategy&& other) noexcept {
  proto_.swap(other.proto_);
  return *this;
}

DistributedStrategy DistributedStrategy::FromText(const std::string& text, const std::string& what) {
  DistributedStrategy s;
  FirstError errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, s.proto_.get())) {
    FLOTILLA_THROW(InvalidArgument, "cannot parse ", what, " as a DistributedStrategy: ",
                   errors.message());
  }
  CheckRanges(s);
  return s;
}

DistributedStrategy DistributedStrategy::FromTextFile(const std::string& path) {
  return FromText(ReadFileAtMost(path, 16u << 20, "strategy file"), path);
}

std::string DistributedStrategy::ToText() const {
  std::string out;
  google::protobuf::TextFormat::PrintToString(*proto_, &out);
  return out;
}

int DistributedStrategy::comm_num() const {
  if (!proto_->has_comm_num() && proto_->has_nccl_comm_num()) return proto_->nccl_comm_num();
  return proto_->comm_num();
}

void DistributedStrategy::CheckOnAssign(const std::string& field) const {
  if (field == "last_comm_group_size_MB") {
    FLOTILLA_CHECK(proto_->last_comm_group_size_mb() > 0, InvalidArgument,
                   "DistributedStrategy.last_comm_group_size_MB=", proto_->last_comm_group_size_mb(),
                   " must be greater than 0");
  }
}

void DistributedStrategy::Validate() const {
  CheckRanges(*this);
  for (const auto& [field, value, nearest] : Changed(*proto_, kRefused)) {
    FLOTILLA_THROW(Unimplemented, "DistributedStrategy.", field, "=", value, " is not applied by Flotilla; ",
                   nearest);
  }
}

std::vector<std::string> DistributedStrategy::Hints() const {
  std::vector<std::string> out;
  for (const auto& [field, value, why] : Changed(*proto_, kHints)) {
    out.push_back(StrCat("DistributedStrategy.", field, "=", value, " has no effect in Flotilla: ", why));
  }
  return out;
}

std::vector<std::string> DistributedStrategy::NewHints() const {
  static std::mutex mu;
  static std::set<std::string> given;
  std::vector<std::string> out;
  std::lock_guard<std::mutex> lock(mu);
  for (std::string& hint : Hints()) {
    if (given.insert(hint).second) out.push_back(std::move(hint));
  }
  return out;
}

void DistributedStrategy::HonourPaddleFlags() {
  const char* ft = std::getenv("FLOTILLA_FAULT_TOLERANCE");
  if (ft != nullptr && *ft != '\0' && !proto_->has_fault_tolerance()) proto_->set_fault_tolerance(ft);
  const char* value = std::getenv("FLAGS_fuse_parameter_memory_size");
  if (value == nullptr || proto_->has_fuse_grad_size_in_mb()) return;
  char* end = nullptr;
  const double mb = std::strtod(value, &end);
  FLOTILLA_CHECK(end != value && *end == '\0' && mb > 0 && std::isfinite(mb) && mb <= INT32_MAX,
                 InvalidArgument, "FLAGS_fuse_parameter_memory_size='", value,
                 "' must be a positive number of MB");
  proto_->set_fuse_grad_size_in_mb(static_cast<int32_t>(std::ceil(mb)));
}

}  // namespace flotilla::fleet
