#include "flotilla/api/regularizer.h"

namespace flotilla::regularizer {

namespace {

// A non-persistable variable shaped like `like`, which needs no gradient.
Variable NewVarLike(Block& block, const std::string& name, const Variable& like) {
  VarDesc& v = block.CreateVar(name);
  v.shape = like.shape();
  v.dtype = like.dtype();
  v.stop_gradient = true;
  return Variable(&block, name);
}

// Regularization runs between backward and the update, as part of computing
// the gradient: the Backward role keeps it on parameter-server trainers, which
// drop Optimize-role ops and push the gradient the update op names.
void AppendBackwardOp(Block& block, OpDesc op) {
  block.AppendOp(std::move(op.Set(kOpRoleAttr, int32_t(kOpRoleBackward))));
}

Variable AppendScale(Block& block, const Variable& x, const std::string& name, float scale) {
  Variable out = NewVarLike(block, name, x);
  AppendBackwardOp(block, OpDesc("scale").In("X", {x.name()}).Out("Out", {name}).Set("scale", scale));
  return out;
}

}  // namespace

Variable L2DecayRegularizer::AppendDecay(Block& block, const Variable& param,
                                         const std::string& name) const {
  return AppendScale(block, param, name, coeff());
}

Variable L1DecayRegularizer::AppendDecay(Block& block, const Variable& param,
                                         const std::string& name) const {
  Variable sign = NewVarLike(block, name + ".sign", param);
  AppendBackwardOp(block, OpDesc("sign").In("X", {param.name()}).Out("Out", {sign.name()}));
  return AppendScale(block, sign, name, coeff());
}

RegularizerPtr L2Decay(float coeff) { return std::make_shared<L2DecayRegularizer>(coeff); }
RegularizerPtr L1Decay(float coeff) { return std::make_shared<L1DecayRegularizer>(coeff); }

void SetParamRegularizer(VarDesc& param, const RegularizerPtr& reg) {
  param.regularizer = reg ? reg->type() : "";
  param.regularization_coeff = reg ? reg->coeff() : 0.0f;
}

RegularizerPtr ParamRegularizer(const VarDesc& param) {
  if (param.regularizer.empty()) return nullptr;
  if (param.regularizer == "l2_decay") return L2Decay(param.regularization_coeff);
  if (param.regularizer == "l1_decay") return L1Decay(param.regularization_coeff);
  FLOTILLA_THROW(InvalidArgument, "parameter '", param.name, "' has regularizer '", param.regularizer,
                 "' (expected l2_decay or l1_decay)");
}

Variable AppendRegularization(const Variable& param, const Variable& grad, const RegularizerPtr& reg) {
  if (reg == nullptr || grad.desc().type == VarType::kSelectedRows) return grad;
  Block& block = *grad.block();
  Variable decay = reg->AppendDecay(block, param, grad.name() + "@DECAY");
  Variable out = NewVarLike(block, grad.name() + kRegularizedSuffix, param);
  AppendBackwardOp(block, OpDesc("sum").In("X", {grad.name(), decay.name()}).Out("Out", {out.name()}));
  return out;
}

}  // namespace flotilla::regularizer
