#include "flotilla/framework/backward.h"

#include <algorithm>

#include "flotilla/common/strings.h"
#include "flotilla/framework/op_registry.h"
#include "framework/backward_internal.h"

namespace flotilla {
namespace internal {
namespace {

// Forward variables whose gradient is wanted: not stop_gradient, not in
// no_grad, and either leaves (parameters, user variables) or computed from a
// variable that itself wanting a gradient.
std::set<std::string> RequiringGrad(const Block& block, const std::set<std::string>& no_grad) {
  std::set<std::string> produced;
  std::set<std::string> wanting;
  auto allowed = [&](const std::string& n) {
    const VarDesc* v = block.FindVar(n);
    return v != nullptr && !v->stop_gradient && !no_grad.count(n) &&
           (v->dtype == DType::kFloat32 || v->dtype == DType::kFloat64);
  };
  for (const auto& op : block.ops()) {
    const OpInfo& info = OpRegistry::Global().Get(op->type);
    for (const auto& in : op->InputArgumentNames()) {
      if (!produced.count(in) && allowed(in)) wanting.insert(in);
    }
    bool any = false;
    for (const auto& [slot, names] : op->inputs) {
      if (std::find(info.no_grad_inputs.begin(), info.no_grad_inputs.end(), slot) !=
          info.no_grad_inputs.end()) {
        continue;
      }
      for (const auto& n : names) any = any || wanting.count(n);
    }
    for (const auto& out : op->OutputArgumentNames()) {
      produced.insert(out);
      if (any && info.differentiable() && allowed(out)) wanting.insert(out);
    }
  }
  return wanting;
}

// Indices of ops that contribute to a target, in program order.
std::vector<size_t> OpsOnPath(const Block& block, const std::vector<std::string>& targets,
                              const std::set<std::string>& wanting) {
  std::set<std::string> needed(targets.begin(), targets.end());
  std::vector<size_t> out;
  for (size_t i = block.op_size(); i-- > 0;) {
    const OpDesc& op = block.op(i);
    auto outs = op.OutputArgumentNames();
    bool useful = std::any_of(outs.begin(), outs.end(), [&](auto& o) { return needed.count(o); });
    if (!useful) continue;
    auto ins = op.InputArgumentNames();
    bool differentiable = std::any_of(ins.begin(), ins.end(), [&](auto& n) { return wanting.count(n); });
    if (!differentiable) continue;
    out.push_back(i);
    for (const auto& in : ins) {
      if (wanting.count(in)) needed.insert(in);
    }
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::string ForwardName(const std::string& grad) {
  auto pos = grad.find(kGradSuffix);
  return pos == std::string::npos ? "" : grad.substr(0, pos);
}

// Tracks, for each gradient variable, the names its partial gradients were
// written to, and sums them before anyone reads the gradient.
class GradAccumulator {
 public:
  explicit GradAccumulator(Block& block) : block_(block) {}

  // The name a new partial gradient of `grad` should be written to.
  std::string NewPartial(const std::string& grad) {
    auto& parts = partials_[grad];
    std::string name = parts.empty() ? grad : grad + "@RENAME@" + std::to_string(parts.size());
    parts.push_back(name);
    return name;
  }
  bool Has(const std::string& grad) const { return partials_.count(grad) > 0; }
  // Sums the partials of `grad` into `grad` when there are several.
  void Flush(const std::string& grad) {
    auto it = partials_.find(grad);
    if (it == partials_.end() || it->second.size() < 2) return;
    OpDesc sum("sum");
    sum.In("X", it->second).Out("Out", {grad}).Set(kOpRoleAttr, int32_t(kOpRoleBackward));
    block_.AppendOp(std::move(sum));
    it->second = {grad};
  }
  void FlushAll() {
    for (auto& [grad, parts] : partials_) Flush(grad);
  }

 private:
  Block& block_;
  std::map<std::string, std::vector<std::string>> partials_;
};

void EmitGradOp(OpDesc grad, const std::set<std::string>& wanting, GradAccumulator& acc,
                Block& block, std::map<std::string, std::string>& result) {
  bool any_input_grad = false;
  for (auto& [slot, names] : grad.inputs) {
    for (auto& n : names) {
      if (ForwardName(n).empty()) continue;
      if (acc.Has(n)) {
        acc.Flush(n);
        any_input_grad = true;
      } else {
        n = kEmptyVarName;  // nobody produced this gradient: it is zero
      }
    }
  }
  if (!any_input_grad) return;  // every upstream gradient is zero, so are its outputs
  bool any_output = false;
  for (auto& [slot, names] : grad.outputs) {
    for (auto& n : names) {
      std::string fwd = ForwardName(n);
      if (fwd.empty() || !wanting.count(fwd)) {
        n = kEmptyVarName;
        continue;
      }
      result[fwd] = n;
      n = acc.NewPartial(n);
      any_output = true;
    }
  }
  if (!any_output) return;
  grad.Set(kOpRoleAttr, int32_t(kOpRoleBackward));
  block.AppendOp(std::move(grad));
}

}  // namespace

std::map<std::string, std::string> AppendBackwardOps(Block& block,
                                                     const std::vector<std::string>& targets,
                                                     const std::set<std::string>& no_grad) {
  std::set<std::string> wanting = RequiringGrad(block, no_grad);
  std::vector<size_t> path = OpsOnPath(block, targets, wanting);
  GradAccumulator acc(block);
  for (const auto& t : targets) acc.NewPartial(GradVarName(t));
  std::map<std::string, std::string> result;
  std::vector<OpDesc> forward;
  for (size_t i : path) forward.push_back(block.op(i));
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    const OpInfo& info = OpRegistry::Global().Get(it->type);
    if (!info.differentiable()) continue;
    for (OpDesc& grad : info.grad_maker(*it)) EmitGradOp(std::move(grad), wanting, acc, block, result);
  }
  acc.FlushAll();
  return result;
}

}  // namespace internal

namespace {

// Tags the last op writing each parameter gradient with op_role_var.
void TagParamGradOps(Block& block, const std::vector<ParamGrad>& pairs, size_t first_backward_op) {
  for (const auto& [param, grad] : pairs) {
    for (size_t i = block.op_size(); i-- > first_backward_op;) {
      OpDesc& op = block.op(i);
      auto outs = op.OutputArgumentNames();
      if (std::find(outs.begin(), outs.end(), grad.name()) == outs.end()) continue;
      auto roles = op.AttrOr<std::vector<std::string>>(kOpRoleVarAttr, {});
      roles.push_back(param.name());
      roles.push_back(grad.name());
      op.Set(kOpRoleVarAttr, roles);
      break;
    }
  }
}

}  // namespace

std::vector<ParamGrad> AppendBackward(const Variable& loss,
                                      const std::vector<std::string>& parameter_list,
                                      const std::set<std::string>& no_grad_set) {
  FLOTILLA_ENFORCE(loss.valid(), "AppendBackward: the loss variable is empty");
  Block& block = *loss.block();
  const VarDesc& loss_desc = loss.desc();
  bool scalar = Numel(loss_desc.shape) == 1 || loss_desc.shape == Dims({-1, 1}) ||
                loss_desc.shape == Dims({-1});
  FLOTILLA_ENFORCE(scalar,
                   "the loss '", loss.name(), "' must be a scalar (shape [1]), got shape ",
                   DimsToString(loss_desc.shape), "; reduce it with layers::mean");
  size_t first_backward = block.op_size();
  Dims shape = loss_desc.shape;
  for (auto& d : shape) d = d < 0 ? 1 : d;
  OpDesc fill("fill_constant");
  fill.Out("Out", {GradVarName(loss.name())})
      .Set("shape", std::vector<int64_t>(shape.begin(), shape.end()))
      .Set("value", 1.0)
      .Set("dtype", static_cast<int32_t>(loss_desc.dtype))
      .Set(kOpRoleAttr, int32_t(kOpRoleBackward | kOpRoleLoss));
  block.AppendOp(std::move(fill));
  auto grads = internal::AppendBackwardOps(block, {loss.name()}, no_grad_set);

  std::vector<std::string> params = parameter_list;
  if (params.empty()) {
    for (const VarDesc* v : block.AllVars()) {
      if (v->is_parameter && !v->stop_gradient) params.push_back(v->name);
    }
  }
  std::vector<ParamGrad> pairs;
  for (const auto& p : params) {
    auto it = grads.find(p);
    if (it == grads.end()) continue;
    pairs.emplace_back(Variable(&block, p), Variable(&block, it->second));
  }
  TagParamGradOps(block, pairs, first_backward);
  return pairs;
}

}  // namespace flotilla
