#include "fleet/collective_pass.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "fleet/ops/collective_ops.h"
#include "fleet/pass_util.h"
#include "fleet/strategy_proto.h"
#include "flotilla/common/enforce.h"

namespace flotilla::fleet {

namespace {

constexpr int64_t kMB = 1 << 20;

bool IsOptimizeOp(const OpDesc& op) { return (op.Role() & kOpRoleOptimize) != 0; }

size_t FirstOptimizeOp(const Block& block) {
  for (size_t i = 0; i < block.op_size(); ++i) {
    if (IsOptimizeOp(block.op(i))) return i;
  }
  return block.op_size();
}

// Where the update section starts: the first optimize op, or an earlier op
// after backward that reads a parameter gradient (weight decay, which
// apply_gradients appends with the backward role before each update).
// Gradients are all-reduced, or merged, before it.
size_t FirstGradConsumer(const Block& block, const std::vector<ParamGrad>& params_grads) {
  const size_t first_opt = FirstOptimizeOp(block);
  std::set<std::string> grads;
  for (const auto& pg : params_grads) grads.insert(pg.second.name());
  auto names_a_grad = [&](const std::vector<std::string>& names) {
    return std::any_of(names.begin(), names.end(), [&](const auto& n) { return grads.count(n) > 0; });
  };
  size_t last_writer = 0;
  for (size_t i = 0; i < first_opt; ++i) {
    if (names_a_grad(block.op(i).OutputArgumentNames())) last_writer = i;
  }
  for (size_t i = last_writer + 1; i < first_opt; ++i) {
    if (names_a_grad(block.op(i).InputArgumentNames())) return i;
  }
  return first_opt;
}

// Index of the op that finally writes `grad` before the optimizer: the one
// backward tags with op_role_var [param, grad] (or, failing that, the last
// writer).
size_t FinalWriter(const Block& block, const ParamGrad& pg, size_t end) {
  size_t found = end;
  for (size_t i = 0; i < end; ++i) {
    const auto& outs = block.op(i).OutputArgumentNames();
    if (std::find(outs.begin(), outs.end(), pg.second.name()) != outs.end()) found = i;
  }
  FLOTILLA_CHECK(found != end, InvalidArgument, "collective pass: no op writes gradient ",
                 pg.second.name(), " of ", pg.first.name());
  auto role_var = block.op(found).AttrOr<std::vector<std::string>>(kOpRoleVarAttr, {});
  FLOTILLA_CHECK(std::find(role_var.begin(), role_var.end(), pg.second.name()) != role_var.end(),
                 Internal, "collective pass: the last writer of ", pg.second.name(), " (",
                 block.op(found).type, ") lacks op_role_var");
  return found;
}

// Gradients in the order backward finishes them.
std::vector<std::pair<size_t, std::string>> GradsInProductionOrder(
    const Block& block, const std::vector<ParamGrad>& params_grads, size_t end) {
  std::vector<std::pair<size_t, std::string>> order;
  for (const ParamGrad& pg : params_grads) order.emplace_back(FinalWriter(block, pg, end), pg.second.name());
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  return order;
}

std::vector<Bucket> Bucketize(const Block& block, const std::vector<std::string>& vars,
                              const DistributedStrategy& s) {
  return MakeBuckets(BucketItems(block, vars), s.fuse_all_reduce_ops(),
                     int64_t{s.fuse_grad_size_in_MB()} * kMB, s.comm_num());
}

// Inserts each (position, op) so that op lands before the op now at
// `position`; ops sharing a position keep their order.
void InsertAll(Block& block, std::vector<std::pair<size_t, OpDesc>> inserts) {
  for (size_t i = inserts.size(); i-- > 0;) {
    size_t pos = inserts[i].first;
    // Later entries with the same position were inserted already, after us.
    block.InsertOp(pos, std::move(inserts[i].second));
  }
}

// A mul_grad/matmul_grad that writes both a weight's gradient (Y) and its
// input's (X) becomes two ops, the weight's first: the weight's all-reduce
// can then start while the input gradient — the rest of backward's critical
// path — is computed. Returns how many ops were added before `end`.
size_t SplitWeightGradOps(Block& block, const std::vector<ParamGrad>& params_grads, size_t end) {
  std::set<std::string> grads;
  for (const auto& pg : params_grads) grads.insert(pg.second.name());
  const std::string dx = GradVarName("X"), dy = GradVarName("Y");
  size_t added = 0;
  for (size_t i = 0; i < end + added; ++i) {
    const OpDesc& op = block.op(i);
    if ((op.type != "mul_grad" && op.type != "matmul_grad") || !op.HasOutput(dx) ||
        !op.HasOutput(dy) || !grads.count(op.Output(dy))) {
      continue;
    }
    OpDesc weight = op, input = op;
    weight.outputs[dx] = {kEmptyVarName};
    input.outputs[dy] = {kEmptyVarName};
    input.attrs.erase(kOpRoleVarAttr);
    block.RemoveOp(i);
    block.InsertOp(i, std::move(weight));
    block.InsertOp(++i, std::move(input));
    ++added;
  }
  return added;
}

CollectivePassResult DataParallel(Program& main, const std::vector<ParamGrad>& params_grads,
                                  const DistributedStrategy& s, int ring_id) {
  Block& block = main.global_block();
  size_t first_opt = FirstGradConsumer(block, params_grads);
  first_opt += SplitWeightGradOps(block, params_grads, first_opt);
  auto order = GradsInProductionOrder(block, params_grads, first_opt);
  std::vector<std::string> grads;
  std::map<std::string, size_t> writer;
  for (const auto& [pos, name] : order) grads.push_back(name), writer[name] = pos;
  CollectivePassResult result{Bucketize(block, grads, s)};
  AllreduceOps ops = MakeAllreduceOps(block, result.buckets, ring_id, StrCat("@fleet.dp", ring_id),
                                      kOpRoleBackward);
  std::vector<std::pair<size_t, OpDesc>> inserts;
  for (size_t b = 0; b < result.buckets.size(); ++b) {
    size_t last = 0;
    for (const auto& g : result.buckets[b].vars) last = std::max(last, writer[g]);
    // A bucket finished just before the optimizer has nothing to overlap.
    if (last + 1 == first_opt && StrategyProto(s).sync_nccl_allreduce()) ops.starts[b].Set("sync", true);
    inserts.emplace_back(last + 1, std::move(ops.starts[b]));
  }
  for (auto& wait : ops.waits) inserts.emplace_back(first_opt, std::move(wait));
  std::stable_sort(inserts.begin(), inserts.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  InsertAll(block, std::move(inserts));
  return result;
}

// Sparse (SelectedRows) gradients, e.g. of an is_sparse embedding, become
// dense "<grad>@DENSE" right after backward writes them (zeros like the
// parameter, plus the rows), and the ops after that read the dense one: it
// is all-reduced like any other, as DDP does for a dense embedding. The
// update then touches every row, as the framework's optimizers do for a
// sparse gradient.
std::vector<ParamGrad> DensifySparseGrads(Block& block, std::vector<ParamGrad> params_grads) {
  for (ParamGrad& pg : params_grads) {
    const std::string sparse = pg.second.name();
    if (block.Var(sparse).type != VarType::kSelectedRows) continue;
    const std::string dense = sparse + "@DENSE";
    VarDesc& v = block.CreateVar(dense);
    v.shape = pg.first.shape();
    v.dtype = pg.first.dtype();
    v.type = VarType::kDenseTensor;
    size_t at = FinalWriter(block, pg, FirstOptimizeOp(block)) + 1;
    for (size_t i = at; i < block.op_size(); ++i) {
      for (auto& [slot, args] : block.op(i).inputs) std::replace(args.begin(), args.end(), sparse, dense);
      auto role_var = block.op(i).AttrOr<std::vector<std::string>>(kOpRoleVarAttr, {});
      std::replace(role_var.begin(), role_var.end(), sparse, dense);
      if (!role_var.empty()) block.op(i).Set(kOpRoleVarAttr, role_var);
    }
    OpDesc zeros = MakeOp("fill_zeros_like", kOpRoleBackward);
    block.InsertOp(at, zeros.In("X", {pg.first.name()}).Out("Out", {dense}));
    OpDesc add = MakeOp("sum", kOpRoleBackward);
    add.In("X", {dense, sparse}).Out("Out", {dense});
    block.InsertOp(at + 1, add.Set(kOpRoleVarAttr, std::vector<std::string>{pg.first.name(), dense}));
    pg.second = Variable(&block, dense);
  }
  return params_grads;
}

std::vector<std::string> ParamNames(const std::vector<ParamGrad>& params_grads) {
  std::vector<std::string> names;
  for (const auto& pg : params_grads) names.push_back(pg.first.name());
  return names;
}

// Removes the ops from `begin` to the end of `block` and returns them.
std::vector<OpDesc> TakeOps(Block& block, size_t begin) {
  std::vector<OpDesc> ops;
  for (size_t i = begin; i < block.op_size(); ++i) ops.push_back(block.op(i));
  block.RemoveOps(begin, block.op_size());
  return ops;
}

CollectivePassResult GradientMerge(Program& main, Program& startup,
                                   const std::vector<ParamGrad>& params_grads,
                                   const DistributedStrategy& s, int ring_id) {
  Block& block = main.global_block();
  const proto::GradientMergeConfig& cfg = StrategyProto(s).gradient_merge_configs();
  std::string tag = StrCat("@fleet.gm", ring_id);
  std::vector<OpDesc> optimize = TakeOps(block, FirstGradConsumer(block, params_grads));
  std::vector<std::string> grads, accs;
  for (auto it = params_grads.rbegin(); it != params_grads.rend(); ++it) {
    grads.push_back(it->second.name());
    accs.push_back(it->second.name() + "@GradientMerge");
    CreateZeroedVar(block, startup, accs.back(), it->first.desc());
  }
  OpDesc accumulate = MakeOp("c_grad_accumulate", kOpRoleOptimize);
  accumulate.In("Grad", grads).In("Acc", accs).Out("Out", accs);
  block.AppendOp(std::move(accumulate));
  std::string cond = AppendStepGate(block, startup, tag, cfg.k_steps(), 1);

  CollectivePassResult result{Bucketize(block, accs, s)};
  AllreduceOps ops = MakeAllreduceOps(block, result.buckets, ring_id, tag, kOpRoleOptimize);
  std::vector<OpDesc> sub = std::move(ops.starts);
  for (auto& w : ops.waits) sub.push_back(std::move(w));
  float scale = cfg.avg() ? 1.0f / static_cast<float>(cfg.k_steps()) : 1.0f;
  for (size_t i = 0; i < grads.size(); ++i) {
    OpDesc op = MakeOp("scale", kOpRoleOptimize);
    sub.push_back(op.In("X", {accs[i]}).Out("Out", {grads[i]}).Set("scale", scale));
  }
  for (auto& op : optimize) sub.push_back(std::move(op));
  for (size_t i = 0; i < accs.size(); ++i) {
    const VarDesc& v = block.Var(accs[i]);
    OpDesc zero = MakeOp("fill_constant", kOpRoleOptimize);
    zero.Out("Out", {accs[i]}).Set("shape", std::vector<int64_t>(v.shape.begin(), v.shape.end()));
    sub.push_back(zero.Set("dtype", static_cast<int32_t>(v.dtype)).Set("value", 0.0));
  }
  AppendConditionalBlock(block, cond, tag, sub, ParamNames(params_grads));
  return result;
}

CollectivePassResult LocalSGD(Program& main, Program& startup,
                              const std::vector<ParamGrad>& params_grads,
                              const DistributedStrategy& s, int ring_id) {
  Block& block = main.global_block();
  std::string tag = StrCat("@fleet.localsgd", ring_id);
  std::vector<std::string> params = ParamNames(params_grads);
  std::reverse(params.begin(), params.end());  // as backward would finish them
  CollectivePassResult result{Bucketize(block, params, s)};
  AllreduceOps ops = MakeAllreduceOps(block, result.buckets, ring_id, tag, kOpRoleOptimize);
  std::string cond = AppendStepGate(block, startup, tag, StrategyProto(s).localsgd_configs().k_steps(),
                                    StrategyProto(s).localsgd_configs().begin_step());
  std::vector<OpDesc> sub = std::move(ops.starts);
  for (auto& w : ops.waits) sub.push_back(std::move(w));
  AppendConditionalBlock(block, cond, tag, sub, ParamNames(params_grads));
  return result;
}


}  // namespace

void UseSyncBatchNorm(Program& main, int ring_id) {
  for (const auto& op : main.global_block().ops()) {
    if (op->type != "batch_norm" && op->type != "batch_norm_grad") continue;
    op->type = "sync_" + op->type;
    op->Set(kRingIdAttr, ring_id);
  }
  main.BumpVersion();
}

void AppendParameterBroadcast(const Program& main, Program& startup, int ring_id) {
  std::vector<std::string> params;
  for (const VarDesc* v : main.global_block().AllVars()) {
    if (v->is_parameter && v->persistable) params.push_back(v->name);
  }
  if (params.empty()) return;
  OpDesc bcast = MakeOp("c_broadcast", kOpRoleForward);
  bcast.In("X", params).Out("Out", params).Set(kRingIdAttr, ring_id).Set("root", int32_t{0});
  startup.global_block().AppendOp(std::move(bcast));
}

CollectivePassResult ApplyCollectivePass(Program& main, Program& startup,
                                         const std::vector<ParamGrad>& params_grads,
                                         const DistributedStrategy& strategy, int ring_id) {
  RegisterCollectiveOps();
  strategy.Validate();
  AppendParameterBroadcast(main, startup, ring_id);
  if (strategy.sync_batch_norm()) UseSyncBatchNorm(main, ring_id);
  if (strategy.localsgd()) return LocalSGD(main, startup, params_grads, strategy, ring_id);
  const auto dense = DensifySparseGrads(main.global_block(), params_grads);
  if (strategy.gradient_merge()) return GradientMerge(main, startup, dense, strategy, ring_id);
  return DataParallel(main, dense, strategy, ring_id);
}

}  // namespace flotilla::fleet
