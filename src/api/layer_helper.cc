#include "api/layer_helper.h"

namespace flotilla::layers::internal {

LayerHelper::LayerHelper(std::string layer_type)
    : type_(std::move(layer_type)), name_(UniqueName(type_)) {}

Variable LayerHelper::CreateTmp(DType dtype, const std::string& suffix) {
  std::string name = name_ + "." + suffix + "_" + std::to_string(tmp_count_++);
  VarDesc& v = main_block().CreateVar(name);
  v.dtype = dtype;
  return Variable(&main_block(), name);
}

Variable LayerHelper::CreateParameter(const ParamAttr& attr, const Dims& shape, DType dtype,
                                      bool is_bias, initializer::InitializerPtr default_init) {
  std::string name = attr.name;
  if (name.empty()) {
    name = name_ + (is_bias ? ".b_" + std::to_string(b_count_++) : ".w_" + std::to_string(w_count_++));
  }
  for (Block* block : {&main_block(), &startup_block()}) {
    VarDesc& v = block->CreateVar(name);
    v.shape = shape;
    v.dtype = dtype;
    v.persistable = true;
    v.is_parameter = true;
    v.stop_gradient = !attr.trainable;
  }
  regularizer::SetParamRegularizer(main_block().Var(name), attr.regularizer);
  FLOTILLA_ENFORCE(attr.learning_rate >= 0.0f, "parameter '", name, "': learning_rate multiplier must be >= 0, got ",
                   attr.learning_rate);
  main_block().Var(name).learning_rate = attr.learning_rate;
  auto init = attr.initializer ? attr.initializer : default_init;
  FLOTILLA_ENFORCE(init != nullptr, "parameter '", name, "' has no initializer");
  init->Append(startup_block(), startup_block().Var(name));
  return Variable(&main_block(), name);
}

OpDesc& LayerHelper::Append(OpDesc op) { return main_block().AppendOp(std::move(op)); }

Variable LayerHelper::Activate(const Variable& x, const std::string& act) {
  if (act.empty()) return x;
  FLOTILLA_ENFORCE(act == "relu" || act == "tanh" || act == "sigmoid" || act == "softmax" ||
                       act == "relu6" || act == "hard_swish",
                   "layer '", name_, "': unknown activation '", act,
                   "' (expected relu, tanh, sigmoid, softmax, relu6 or hard_swish)");
  Variable out = CreateTmp(x.dtype(), act);
  Append(OpDesc(act).In("X", {x.name()}).Out("Out", {out.name()}));
  return out;
}

Variable UnaryOp(const std::string& type, const Variable& x, AttributeMap attrs) {
  LayerHelper helper(type);
  Variable out = helper.CreateTmp(x.dtype());
  OpDesc op(type);
  op.In("X", {x.name()}).Out("Out", {out.name()});
  op.attrs = std::move(attrs);
  helper.Append(std::move(op));
  return out;
}

}  // namespace flotilla::layers::internal
