#include "flotilla/fleet/distribute_transpiler.h"

#include <algorithm>
#include <map>
#include <set>

#include "fleet/ps/ps_ops.h"
#include "fleet/ps/table_spec.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"

namespace flotilla::fleet {

namespace {

using Strings = std::vector<std::string>;

bool IsOptimize(const OpDesc& op) {
  return (op.Role() & kOpRoleOptimize) != 0 && op.HasAttr(kOpRoleVarAttr);
}

// The startup op that initialises `name`, or nullptr.
const OpDesc* InitOpOf(const Program& startup, const std::string& name) {
  for (const auto& op : startup.global_block().ops()) {
    const auto& outs = op->Outputs("Out");
    if (std::find(outs.begin(), outs.end(), name) != outs.end()) return op.get();
  }
  return nullptr;
}

// The optimizer's constant rate; 0 for a scheduled rate (a variable the
// main program computes), which trainers send with every push.
float LearningRate(const Program& startup, const Block& main, const OpDesc& opt) {
  const std::string& lr = opt.Input("LearningRate");
  const OpDesc* init = InitOpOf(startup, lr);
  if (init != nullptr && init->type == "fill_constant") return init->Attr<float>("value");
  const bool computed = std::any_of(main.ops().begin(), main.ops().end(), [&](const auto& op) {
    auto outs = op->OutputArgumentNames();
    return std::find(outs.begin(), outs.end(), lr) != outs.end();
  });
  FLOTILLA_CHECK(computed, InvalidArgument, "DistributeTranspiler: learning rate '", lr, "' of ",
                 opt.type, " is neither a constant set by the startup program nor computed by the "
                 "main program");
  return 0.0f;
}

void ReadInitializer(const Program& startup, PsTableInfo& t) {
  const OpDesc* init = InitOpOf(startup, t.name);
  if (init == nullptr) return;
  int64_t seed = init->AttrOr<int64_t>("seed", 0);
  t.init_seed = static_cast<uint64_t>(seed != 0 ? seed : static_cast<int64_t>(startup.random_seed()));
  if (init->type == "uniform_random") {
    t.init_kind = "uniform";
    t.init_a = init->Attr<float>("min");
    t.init_b = init->Attr<float>("max");
  } else if (init->type == "gaussian_random") {
    t.init_kind = "normal";
    t.init_a = init->Attr<float>("mean");
    t.init_b = init->Attr<float>("std");
  } else if (init->type == "fill_constant") {
    t.init_a = init->Attr<float>("value");
  }
}

PsTableInfo TableOf(const Program& startup, const Block& main, const OpDesc& opt) {
  auto pg = opt.Attr<Strings>(kOpRoleVarAttr);
  PsTableInfo t;
  t.name = pg.at(0);
  t.grad = pg.at(1);
  t.dims = main.Var(t.name).shape;
  t.optimizer = opt.type;
  t.learning_rate = LearningRate(startup, main, opt);
  t.beta1 = opt.AttrOr<float>("beta1", t.beta1);
  t.beta2 = opt.AttrOr<float>("beta2", t.beta2);
  t.epsilon = opt.AttrOr<float>("epsilon", opt.type == "adagrad" ? 1e-6f : t.epsilon);
  t.momentum = opt.AttrOr<float>("mu", t.momentum);
  t.use_nesterov = opt.AttrOr<bool>("use_nesterov", t.use_nesterov);
  return t;
}

Strings SplitEndpoints(const std::string& pservers) {
  Strings out;
  for (const auto& e : Split(pservers, ',')) {
    std::string ep = Trim(e);
    if (ep.empty()) continue;
    ParseHostPort(ep, "pserver endpoint");  // throws InvalidArgument naming it
    out.push_back(ep);
  }
  FLOTILLA_CHECK(!out.empty(), InvalidArgument, "DistributeTranspiler: pservers '", pservers,
                 "' names no endpoint");
  return out;
}

}  // namespace

DistributeTranspiler::DistributeTranspiler(DistributeTranspilerConfig config)
    : config_(std::move(config)) {
  RegisterPsOps();
}

void DistributeTranspiler::transpile(int trainer_id, const std::string& pservers, int trainers,
                                     bool sync_mode, Program* program, Program* startup) {
  FLOTILLA_CHECK(trainers >= 1 && trainer_id >= 0 && trainer_id < trainers, InvalidArgument,
                 "DistributeTranspiler: trainer_id ", trainer_id, " must be in [0, ", trainers, ")");
  if (!sync_mode && config_.mode == "sync") config_.mode = "async";
  ps::ParsePsMode(config_.mode);
  Program& main = program != nullptr ? *program : default_main_program();
  Program& start = startup != nullptr ? *startup : default_startup_program();
  trainer_id_ = trainer_id;
  trainers_ = trainers;
  endpoints_ = SplitEndpoints(pservers);
  Analyse(main, start);
  RewriteTrainer(main);
  RewriteStartup(start);
  main_ = &main;
}

void DistributeTranspiler::Analyse(const Program& main, const Program& startup) {
  const Block& b = main.global_block();
  std::map<std::string, const OpDesc*> lookups;  // sparse table → its lookup op
  for (const auto& op : b.ops()) {
    if (IsLookup(*op) && (op->Attr<bool>("is_sparse") || op->Attr<bool>("is_distributed"))) {
      lookups[op->Input("W")] = op.get();
    }
  }
  tables_.clear();
  for (const auto& op : b.ops()) {
    if (!IsOptimize(*op)) continue;
    PsTableInfo t = TableOf(startup, b, *op);
    RuleConfig(t);  // throws Unimplemented for an optimizer the servers cannot run
    auto it = lookups.find(t.name);
    if (it != lookups.end()) {
      t.sparse = true;
      t.distributed = it->second->Attr<bool>("is_distributed");
      ReadInitializer(startup, t);
    }
    tables_.push_back(std::move(t));
  }
}

Program& DistributeTranspiler::get_trainer_program() const {
  FLOTILLA_CHECK(main_ != nullptr, InvalidArgument,
                 "DistributeTranspiler::get_trainer_program called before transpile");
  return *main_;
}

Program DistributeTranspiler::get_pserver_program(const std::string& endpoint,
                                                  const std::string& model_dir) const {
  auto it = std::find(endpoints_.begin(), endpoints_.end(), endpoint);
  FLOTILLA_CHECK(it != endpoints_.end(), InvalidArgument, "DistributeTranspiler: endpoint '",
                 endpoint, "' is not one of the pservers '", Join(endpoints_, ","), "'");
  Program p;
  p.global_block().AppendOp(OpDesc("listen_and_serv")
                                .Set("endpoint", endpoint)
                                .Set("server_index", static_cast<int32_t>(it - endpoints_.begin()))
                                .Set("num_servers", static_cast<int32_t>(endpoints_.size()))
                                .Set("num_trainers", static_cast<int32_t>(trainers_))
                                .Set("mode", config_.mode)
                                .Set("sync_mode", config_.mode == "sync")
                                .Set("tables", TablesToJson(tables_))
                                .Set("sparse_config", SparseSettingsToJson(config_.sparse))
                                .Set("min_block_size", config_.min_block_size)
                                .Set("token", config_.token)
                                .Set("model_dir", model_dir)
                                .Set(kOpRoleAttr, int32_t(kOpRoleRPC)));
  return p;
}

Program DistributeTranspiler::get_startup_program(const std::string& endpoint,
                                                  const Program& pserver_program) const {
  FLOTILLA_CHECK(pserver_program.global_block().op_size() == 1 &&
                     pserver_program.global_block().op(0).Attr<std::string>("endpoint") == endpoint,
                 InvalidArgument, "DistributeTranspiler::get_startup_program: the program is not the "
                 "pserver program of '", endpoint, "'");
  return Program();
}

}  // namespace flotilla::fleet
