#include "fleet/pass_util.h"

#include "fleet/ops/collective_ops.h"
#include "flotilla/common/enforce.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla::fleet {

OpDesc MakeOp(const std::string& type, int32_t role) {
  OpDesc op(type);
  for (const auto& [name, value] : OpRegistry::Global().Get(type).default_attrs) op.Set(name, value);
  op.Set(kOpRoleAttr, role);
  return op;
}

std::vector<BucketItem> BucketItems(const Block& block, const std::vector<std::string>& vars) {
  std::vector<BucketItem> items;
  for (const auto& name : vars) {
    const VarDesc& v = block.Var(name);
    FLOTILLA_CHECK(v.type == VarType::kDenseTensor, InvalidArgument, "collective pass: ", name,
                   " is not a dense tensor (sparse gradients are not all-reduced)");
    int64_t n = Numel(v.shape);
    FLOTILLA_CHECK(n >= 0, InvalidArgument, "collective pass: ", name, " has no static shape (",
                   DimsToString(v.shape), ")");
    items.push_back({.name = name, .bytes = n * static_cast<int64_t>(SizeOf(v.dtype)), .dtype = v.dtype});
  }
  return items;
}

AllreduceOps MakeAllreduceOps(Block& block, const std::vector<Bucket>& buckets, int ring_id,
                              const std::string& tag, int32_t role) {
  AllreduceOps ops;
  for (size_t b = 0; b < buckets.size(); ++b) {
    std::string handle = StrCat(tag, ".bucket", b);
    block.CreateVar(handle).type = VarType::kRaw;
    OpDesc start = MakeOp("c_allreduce_start", role);
    start.In("X", buckets[b].vars).Out("Handle", {handle});
    start.Set(kRingIdAttr, ring_id).Set(kCommAttr, buckets[b].comm).Set(kBucketAttr, int32_t(b));
    OpDesc wait = MakeOp("c_allreduce_wait", role);
    wait.In("Handle", {handle}).In("X", buckets[b].vars).Out("Out", buckets[b].vars);
    wait.Set(kRingIdAttr, ring_id);
    ops.starts.push_back(std::move(start));
    ops.waits.push_back(std::move(wait));
  }
  return ops;
}

void CreateZeroedVar(Block& main, Program& startup, const std::string& name, const VarDesc& like) {
  for (Block* b : {&main, &startup.global_block()}) {
    VarDesc& v = b->CreateVar(name);
    v.shape = like.shape;
    v.dtype = like.dtype;
    v.persistable = true;
    v.stop_gradient = true;
  }
  OpDesc fill = MakeOp("fill_constant", kOpRoleForward);
  fill.Out("Out", {name});
  fill.Set("shape", std::vector<int64_t>(like.shape.begin(), like.shape.end()));
  fill.Set("dtype", static_cast<int32_t>(like.dtype)).Set("value", 0.0);
  startup.global_block().AppendOp(std::move(fill));
}

std::string AppendStepGate(Block& main, Program& startup, const std::string& tag, int k_steps,
                           int begin_step) {
  VarDesc counter;
  counter.shape = {1};
  counter.dtype = DType::kInt64;
  std::string step = tag + ".step", cond = tag + ".cond";
  CreateZeroedVar(main, startup, step, counter);
  VarDesc& c = main.CreateVar(cond);
  c.shape = {1};
  c.dtype = DType::kInt32;
  OpDesc gate = MakeOp("c_step_gate", kOpRoleOptimize);
  gate.In("Step", {step}).Out("StepOut", {step}).Out("Cond", {cond});
  gate.Set("k_steps", int32_t{k_steps}).Set("begin_step", int32_t{begin_step});
  main.AppendOp(std::move(gate));
  return cond;
}

void AppendConditionalBlock(Block& main, const std::string& cond, const std::string& tag,
                            const std::vector<OpDesc>& ops, const std::vector<std::string>& outs) {
  Program sub;
  for (const OpDesc& op : ops) sub.global_block().AppendOpRaw(op);
  std::string state = tag + ".state";
  main.CreateVar(state).type = VarType::kRaw;
  OpDesc block = MakeOp("c_conditional_block", kOpRoleOptimize);
  block.In("Cond", {cond}).Out("State", {state}).Out("Out", outs);
  block.Set("sub_program", Base64Encode(sub.Serialize()));
  main.AppendOp(std::move(block));
}

}  // namespace flotilla::fleet
