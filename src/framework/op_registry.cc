#include "flotilla/framework/op_registry.h"

#include <sstream>

#include "flotilla/common/strings.h"
#include "flotilla/framework/program.h"

namespace flotilla {

// ------------------------------------------------------------- OpRegistry

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = new OpRegistry();
  return *registry;
}

namespace {

// Output `out` of the op takes input `in`'s offsets when they describe its
// rows, and none otherwise (so no stale offsets survive from an earlier run).
void ShareLoDAfterRun(const ExecutionContext& ctx, const std::string& in, const std::string& out) {
  ScopeVar* x = ctx.InputVar(in);
  ScopeVar* y = ctx.OutputVar(out);
  if (x == nullptr || y == nullptr || !x->IsTensor() || !y->IsTensor()) return;
  const Tensor& from = *x->GetMutableTensor();
  Tensor* to = y->GetMutableTensor();
  const bool fits = from.has_lod() && to->rank() >= 1 && from.lod().back().back() == to->dim(0);
  if (fits) {
    to->ShareLoD(from);
  } else if (to->has_lod()) {
    to->set_lod({});
  }
}

KernelFn WithSharedLoD(KernelFn kernel, std::vector<std::pair<std::string, std::string>> pairs) {
  return [kernel = std::move(kernel), pairs = std::move(pairs)](ExecutionContext& ctx) {
    kernel(ctx);
    for (const auto& [in, out] : pairs) ShareLoDAfterRun(ctx, in, out);
  };
}

}  // namespace

void OpRegistry::Register(OpInfo info) {
  FLOTILLA_CHECK(!ops_.count(info.type), AlreadyExists, "op '", info.type,
                 "' is registered twice");
  if (!info.share_lod.empty()) {
    for (auto& [kind, kernel] : info.kernels) kernel = WithSharedLoD(std::move(kernel), info.share_lod);
  }
  std::string type = info.type;
  ops_.emplace(std::move(type), std::move(info));
}

void OpRegistry::RegisterWithGrad(OpInfo forward, GradSlots grad, KernelFn grad_kernel) {
  FLOTILLA_CHECK(!forward.grad_maker, InvalidArgument, "op '", forward.type,
                 "': RegisterWithGrad makes the grad maker; the OpInfo must not have one");
  const std::string grad_type = forward.type + "_grad";
  OpInfo backward{.type = grad_type,
                  .infer_shape = grad.infer_shape ? grad.infer_shape : InferGradShapeLikeForward,
                  .kernels = {{Place::Kind::kCPU, std::move(grad_kernel)}},
                  .default_attrs = forward.default_attrs};
  forward.grad_maker = [grad_type, slots = std::move(grad)](const OpDesc& fwd) -> std::vector<OpDesc> {
    return GradOpBuilder(fwd, grad_type).ForwardInputs(slots.forward_inputs)
        .ForwardOutputs(slots.forward_outputs).OutputGrads(slots.output_grads)
        .InputGrads(slots.input_grads);
  };
  Register(std::move(forward));
  Register(std::move(backward));
}

const OpInfo* OpRegistry::Find(const std::string& type) const {
  auto it = ops_.find(type);
  return it == ops_.end() ? nullptr : &it->second;
}

const OpInfo& OpRegistry::Get(const std::string& type) const {
  const OpInfo* info = Find(type);
  if (info == nullptr) FLOTILLA_THROW(NotFound, "op '", type, "' is not registered");
  return *info;
}

std::vector<std::string> OpRegistry::Types() const {
  std::vector<std::string> out;
  for (const auto& [type, info] : ops_) out.push_back(type);
  return out;
}

// ------------------------------------------------------ InferShapeContext

namespace {

const std::string& Arg(const std::vector<std::string>& names, size_t i, const OpDesc& op,
                       const std::string& slot) {
  FLOTILLA_ENFORCE(i < names.size(), "op '", op.type, "' slot '", slot, "' has ", names.size(),
                   " arguments; argument ", i, " was requested");
  return names[i];
}

}  // namespace

std::string InferShapeContext::Where() const { return "op '" + op_.type + "' " + op_.DebugString(); }

Dims InferShapeContext::InputDim(const std::string& slot, size_t i) const {
  return block_.Var(Arg(op_.Inputs(slot), i, op_, slot)).shape;
}

std::vector<Dims> InferShapeContext::InputDims(const std::string& slot) const {
  std::vector<Dims> out;
  for (const auto& n : op_.Inputs(slot)) out.push_back(block_.Var(n).shape);
  return out;
}

DType InferShapeContext::InputDType(const std::string& slot, size_t i) const {
  return block_.Var(Arg(op_.Inputs(slot), i, op_, slot)).dtype;
}

VarType InferShapeContext::InputVarType(const std::string& slot, size_t i) const {
  return block_.Var(Arg(op_.Inputs(slot), i, op_, slot)).type;
}

VarDesc* InferShapeContext::OutputVar(const std::string& slot, size_t i) {
  const auto& names = op_.Outputs(slot);
  if (i >= names.size() || names[i] == kEmptyVarName || names[i].empty()) return nullptr;
  return &block_.CreateVar(names[i]);
}

void InferShapeContext::SetOutputDim(const std::string& slot, const Dims& dims, size_t i) {
  if (VarDesc* v = OutputVar(slot, i)) v->shape = dims;
}

void InferShapeContext::SetOutputDType(const std::string& slot, DType dtype, size_t i) {
  if (VarDesc* v = OutputVar(slot, i)) v->dtype = dtype;
}

void InferShapeContext::SetOutputVarType(const std::string& slot, VarType type, size_t i) {
  if (VarDesc* v = OutputVar(slot, i)) v->type = type;
}

int InferShapeContext::InputLoDLevel(const std::string& slot, size_t i) const {
  return block_.Var(Arg(op_.Inputs(slot), i, op_, slot)).lod_level;
}

void InferShapeContext::SetOutputLoDLevel(const std::string& slot, int level, size_t i) {
  if (VarDesc* v = OutputVar(slot, i)) v->lod_level = level;
}

void InferShapeContext::ShareDim(const std::string& in_slot, const std::string& out_slot,
                                 size_t i) {
  if (!op_.HasInput(in_slot)) return;
  SetOutputDim(out_slot, InputDim(in_slot, i), i);
  SetOutputDType(out_slot, InputDType(in_slot, i), i);
}

void InferGradShapeLikeForward(InferShapeContext& ctx) {
  for (const auto& [slot, names] : ctx.op().outputs) {
    if (!EndsWith(slot, kGradSuffix)) continue;
    std::string fwd_slot = slot.substr(0, slot.size() - std::string(kGradSuffix).size());
    const auto& fwd_names = ctx.op().Inputs(fwd_slot);
    for (size_t i = 0; i < names.size() && i < fwd_names.size(); ++i) {
      ctx.SetOutputDim(slot, ctx.InputDim(fwd_slot, i), i);
      ctx.SetOutputDType(slot, ctx.InputDType(fwd_slot, i), i);
    }
  }
}

// ------------------------------------------------------- ExecutionContext

namespace {

const std::vector<ScopeVar*>& RtSlot(const std::map<std::string, std::vector<ScopeVar*>>& m,
                                     const std::string& slot) {
  static const std::vector<ScopeVar*> kEmpty;
  auto it = m.find(slot);
  return it == m.end() ? kEmpty : it->second;
}

}  // namespace

std::string ExecutionContext::Where() const { return "op '" + op_.type + "'"; }

bool ExecutionContext::HasInput(const std::string& slot) const {
  for (ScopeVar* v : RtSlot(rt_.inputs, slot)) {
    if (v != nullptr) return true;
  }
  return false;
}

bool ExecutionContext::HasOutput(const std::string& slot) const {
  for (ScopeVar* v : RtSlot(rt_.outputs, slot)) {
    if (v != nullptr) return true;
  }
  return false;
}

size_t ExecutionContext::InputSize(const std::string& slot) const {
  return RtSlot(rt_.inputs, slot).size();
}

ScopeVar* ExecutionContext::InputVar(const std::string& slot, size_t i) const {
  const auto& vars = RtSlot(rt_.inputs, slot);
  return i < vars.size() ? vars[i] : nullptr;
}

ScopeVar* ExecutionContext::OutputVar(const std::string& slot, size_t i) const {
  const auto& vars = RtSlot(rt_.outputs, slot);
  return i < vars.size() ? vars[i] : nullptr;
}

const std::string& ExecutionContext::InputName(const std::string& slot, size_t i) const {
  return Arg(op_.Inputs(slot), i, op_, slot);
}

const std::string& ExecutionContext::OutputName(const std::string& slot, size_t i) const {
  return Arg(op_.Outputs(slot), i, op_, slot);
}

const Tensor& ExecutionContext::Input(const std::string& slot, size_t i) const {
  ScopeVar* v = InputVar(slot, i);
  FLOTILLA_ENFORCE(v != nullptr, Where(), ": input ", slot, "[", i, "] is missing");
  FLOTILLA_ENFORCE(v->IsTensor() && v->IsInitialized(), Where(), ": input ", slot, " ('",
                   v->name(), "') has no tensor data; was it fed or initialised by the startup program?");
  return v->GetTensor();
}

std::vector<const Tensor*> ExecutionContext::MultiInput(const std::string& slot) const {
  std::vector<const Tensor*> out;
  for (size_t i = 0; i < InputSize(slot); ++i) out.push_back(&Input(slot, i));
  return out;
}

Tensor* ExecutionContext::Output(const std::string& slot, size_t i) const {
  ScopeVar* v = OutputVar(slot, i);
  FLOTILLA_ENFORCE(v != nullptr, Where(), ": output ", slot, "[", i, "] is missing");
  return v->GetMutableTensor();
}

std::vector<Tensor*> ExecutionContext::MultiOutput(const std::string& slot) const {
  std::vector<Tensor*> out;
  for (ScopeVar* v : RtSlot(rt_.outputs, slot)) out.push_back(v ? v->GetMutableTensor() : nullptr);
  return out;
}

// ---------------------------------------------------------- GradOpBuilder

GradOpBuilder::GradOpBuilder(const OpDesc& forward, std::string grad_type)
    : forward_(forward), grad_(std::move(grad_type)) {
  grad_.attrs = forward.attrs;
}

GradOpBuilder& GradOpBuilder::ForwardInputs(const std::vector<std::string>& slots) {
  for (const auto& s : slots) {
    if (forward_.inputs.count(s)) grad_.inputs[s] = forward_.inputs.at(s);
  }
  return *this;
}

GradOpBuilder& GradOpBuilder::ForwardOutputs(const std::vector<std::string>& slots) {
  for (const auto& s : slots) {
    if (forward_.outputs.count(s)) grad_.inputs[s] = forward_.outputs.at(s);
  }
  return *this;
}

namespace {
std::vector<std::string> GradNames(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back(GradVarName(n));
  return out;
}
}  // namespace

GradOpBuilder& GradOpBuilder::OutputGrads(const std::vector<std::string>& slots) {
  for (const auto& s : slots) grad_.inputs[GradVarName(s)] = GradNames(forward_.Outputs(s));
  return *this;
}

GradOpBuilder& GradOpBuilder::InputGrads(const std::vector<std::string>& slots) {
  for (const auto& s : slots) grad_.outputs[GradVarName(s)] = GradNames(forward_.Inputs(s));
  return *this;
}

}  // namespace flotilla
