// The trainer-side rewrite of DistributeTranspiler: drop the optimizer ops,
// redirect server-table lookups, add the ps_* ops.
#include <algorithm>
#include <map>
#include <set>

#include "fleet/ps/table_spec.h"
#include "flotilla/fleet/distribute_transpiler.h"

namespace flotilla::fleet {

namespace {

using Strings = std::vector<std::string>;

bool IsLookupGrad(const OpDesc& op) {
  return op.type == "lookup_table_grad" || op.type == "lookup_table_v2_grad";
}

const PsTableInfo* FindTable(const std::vector<PsTableInfo>& tables, const std::string& name) {
  for (const auto& t : tables) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

OpDesc DistributedLookup(const OpDesc& op, const PsTableInfo& t) {
  return OpDesc("distributed_lookup_table")
      .In("Ids", op.Inputs("Ids"))
      .Out("Out", op.Outputs("Out"))
      .Set("table_name", t.name)
      .Set("dim", RowWidth(t.dims))
      .Set("padding_idx", op.AttrOr<int64_t>("padding_idx", -1))
      .Set("v2", op.type == "lookup_table_v2")
      .Set(kOpRoleAttr, op.Role());
}

// With `stats`, the gradient rows also carry each id's show and click
// (clicks from `click_var` when set) for the servers' accessor.
OpDesc DistributedLookupGrad(const OpDesc& op, const PsTableInfo& t, bool stats,
                             const std::string& click_var) {
  OpDesc grad = OpDesc("distributed_lookup_table_grad")
                    .In("Ids", op.Inputs("Ids"))
                    .In("Out@GRAD", op.Inputs("Out@GRAD"))
                    .Out("W@GRAD", op.Outputs("W@GRAD"))
                    .Set("dim", RowWidth(t.dims))
                    .Set("height", t.dims.at(0))
                    .Set("padding_idx", op.AttrOr<int64_t>("padding_idx", -1))
                    .Set("with_stats", stats)
                    .Set(kOpRoleAttr, op.Role());
  if (stats && !click_var.empty()) grad.In("Click", {click_var});
  return grad;
}

// Replaces lookups (and their gradients) of server tables in `b`; removes
// the variables of is_distributed tables, which trainers never hold.
// `stats`: gradients carry show/click for the servers' accessor.
void RedirectLookups(Block& b, const std::vector<PsTableInfo>& tables, bool stats = false,
                     const std::string& click_var = "") {
  for (size_t i = 0; i < b.op_size(); ++i) {
    OpDesc& op = b.op(i);
    if (!IsLookup(op) && !IsLookupGrad(op)) continue;
    const PsTableInfo* t = FindTable(tables, op.Input("W"));
    if (t == nullptr || !t->sparse) continue;
    if (IsLookup(op)) {
      op = DistributedLookup(op, *t);
    } else {
      op = DistributedLookupGrad(op, *t, stats, click_var);
      for (const auto& g : op.Outputs("W@GRAD")) b.Var(g).type = VarType::kSelectedRows;
    }
  }
  for (const auto& t : tables) {
    if (t.distributed && b.HasVar(t.name)) b.RemoveVar(t.name);
  }
}

// Per table (in dense / sparse order): name, gradient and the learning-rate
// variable its optimizer op read. Pushes carry that variable's value, so a
// scheduled rate reaches the servers step by step; GEO's local sparse SGD
// reads it too.
struct Parts {
  Strings dense, dense_grads, dense_lrs, sparse, sparse_grads, sparse_lrs, seed_sparse;
  std::vector<int64_t> widths;
};

Parts Split(const Block& b, const std::vector<PsTableInfo>& tables) {
  std::map<std::string, std::string> lr_of;  // parameter → learning-rate variable
  for (const auto& op : b.ops()) {
    if ((op->Role() & kOpRoleOptimize) == 0 || !op->HasAttr(kOpRoleVarAttr)) continue;
    lr_of[op->Attr<Strings>(kOpRoleVarAttr).at(0)] = op->Input("LearningRate");
  }
  Parts p;
  for (const auto& t : tables) {
    const std::string& lr = lr_of.at(t.name);
    if (!t.sparse) {
      p.dense.push_back(t.name);
      p.dense_grads.push_back(t.grad);
      p.dense_lrs.push_back(lr);
      p.widths.push_back(RowWidth(t.dims));
      continue;
    }
    p.sparse.push_back(t.name);
    p.sparse_grads.push_back(t.grad);
    p.sparse_lrs.push_back(lr);
    if (!t.distributed) p.seed_sparse.push_back(t.name);
  }
  return p;
}

void RemoveOptimizerOps(Block& b, const std::vector<PsTableInfo>& tables, bool geo) {
  for (size_t i = b.op_size(); i-- > 0;) {
    const OpDesc& op = b.op(i);
    if ((op.Role() & kOpRoleOptimize) == 0) continue;
    const PsTableInfo* t =
        op.HasAttr(kOpRoleVarAttr) ? FindTable(tables, op.Attr<Strings>(kOpRoleVarAttr).at(0)) : nullptr;
    if (geo && t != nullptr && !t->sparse) {
      FLOTILLA_CHECK(op.type == "sgd", Unimplemented, "DistributeTranspiler: GEO mode runs SGD only, "
                     "parameter '", t->name, "' uses ", op.type);
      continue;  // trainers optimise dense parameters locally
    }
    b.RemoveOp(i);
  }
}

OpDesc WithDense(OpDesc op, const Parts& p) {
  return op.Set("dense_names", p.dense).Set("dense_row_widths", p.widths).Set(kOpRoleAttr, int32_t(kOpRoleRPC));
}

// One ps_prefetch_sparse after ps_trainer_init brings the rows of every
// lookup of fed ids to the trainer in one round trip (GEO: into its cache;
// sync, async: for this step's lookups), when the step looks up two tables
// or more (ids the program computes are not known at its start; their
// lookups pull for themselves).
void AddPrefetch(Block& b) {
  std::set<std::string> computed;
  for (const auto& op : b.ops()) {
    for (const auto& n : op->OutputArgumentNames()) computed.insert(n);
  }
  Strings ids, tables;
  std::vector<int64_t> padding;
  for (const auto& op : b.ops()) {
    if (op->type != "distributed_lookup_table" || computed.count(op->Input("Ids"))) continue;
    ids.push_back(op->Input("Ids"));
    tables.push_back(op->Attr<std::string>("table_name"));
    padding.push_back(op->Attr<int64_t>("padding_idx"));
  }
  if (ids.size() < 2) return;
  b.InsertOp(1, OpDesc("ps_prefetch_sparse")
                    .In("Ids", ids)
                    .Set("table_names", tables)
                    .Set("padding_idxs", padding)
                    .Set(kOpRoleAttr, int32_t(kOpRoleRPC)));
}

}  // namespace

void DistributeTranspiler::RewriteTrainer(Program& main) const {
  Block& b = main.global_block();
  bool geo = config_.mode == "geo";
  Parts p = Split(b, tables_);
  RemoveOptimizerOps(b, tables_, geo);
  // GEO trainers optimise sparse rows locally and push deltas: no statistics.
  const bool stats = !geo && config_.sparse.accessor.keeps_stats();
  FLOTILLA_CHECK(config_.sparse.click_var.empty() || b.HasVar(config_.sparse.click_var), InvalidArgument,
                 "DistributeTranspiler: sparse_table_configs.click_var '", config_.sparse.click_var,
                 "' is not a variable of the program");
  RedirectLookups(b, tables_, stats, config_.sparse.click_var);
  b.InsertOp(0, WithDense(OpDesc("ps_trainer_init"), p)
                    .Set("endpoints", endpoints_)
                    .Set("trainer_id", static_cast<int32_t>(trainer_id_))
                    .Set("trainers", static_cast<int32_t>(trainers_))
                    .Set("mode", config_.mode)
                    .Set("sparse_names", p.sparse)
                    .Set("seed_sparse_names", p.seed_sparse)
                    .Set("k_steps", static_cast<int32_t>(config_.geo_k_steps))
                    .Set("send_queue_size", static_cast<int32_t>(config_.send_queue_size))
                    .Set("max_merge_var_num", static_cast<int32_t>(config_.max_merge_var_num))
                    .Set("independent_recv_thread", config_.independent_recv_thread)
                    .Set("seed_servers", config_.seed_servers)
                    .Set("rpc_timeout_ms", config_.rpc_timeout_ms)
                    .Set("min_block_size", config_.min_block_size)
                    .Set("token", config_.token));
  AddPrefetch(b);
  b.AppendOp(WithDense(OpDesc("ps_send"), p)
                 .In("Grad", geo ? Strings{} : p.dense_grads)
                 .In("LearningRate", geo ? Strings{} : p.dense_lrs)
                 .In("SparseGrad", p.sparse_grads)
                 .In("SparseLearningRate", p.sparse_lrs)
                 .Set("sparse_names", p.sparse));
  if (config_.mode == "sync") b.AppendOp(OpDesc("ps_barrier").Set(kOpRoleAttr, int32_t(kOpRoleRPC)));
  if (geo) {
    b.AppendOp(OpDesc("ps_geo_step").Set(kOpRoleAttr, int32_t(kOpRoleRPC)));
  } else {
    b.AppendOp(WithDense(OpDesc("ps_recv"), p).Out("Out", p.dense));
  }
  main.BumpVersion();
}

void DistributeTranspiler::RewriteStartup(Program& startup) const {
  Block& b = startup.global_block();
  for (const auto& t : tables_) {
    if (!t.distributed) continue;
    for (size_t i = b.op_size(); i-- > 0;) {
      auto outs = b.op(i).OutputArgumentNames();
      if (std::find(outs.begin(), outs.end(), t.name) != outs.end()) b.RemoveOp(i);
    }
    if (b.HasVar(t.name)) b.RemoveVar(t.name);
  }
  startup.BumpVersion();
}

Program DistributeTranspiler::get_test_program(const Program& test_program) const {
  Program copy = test_program.Clone();
  RedirectLookups(copy.global_block(), tables_);
  copy.BumpVersion();
  return copy;
}

}  // namespace flotilla::fleet
