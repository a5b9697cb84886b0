#include "flotilla/api/optimizer.h"

#include "flotilla/api/initializer.h"

namespace flotilla::optimizer {

MinimizeResult Optimizer::minimize(const Variable& loss, Program* startup,
                                   const std::vector<std::string>& parameter_list,
                                   const std::set<std::string>& no_grad_set) {
  MinimizeResult result;
  result.params_grads = backward(loss, startup, parameter_list, no_grad_set);
  result.optimize_ops = apply_gradients(result.params_grads);
  return result;
}

std::vector<ParamGrad> Optimizer::backward(const Variable& loss, Program* startup,
                                           const std::vector<std::string>& parameter_list,
                                           const std::set<std::string>& no_grad_set) {
  startup_ = startup != nullptr ? startup : &default_startup_program();
  return AppendBackward(loss, parameter_list, no_grad_set);
}

LearningRate::LearningRate(const Variable& var) : var_(var) {
  FLOTILLA_ENFORCE(var.valid(), "optimizer learning rate: the variable is not valid");
  FLOTILLA_ENFORCE(var.shape() == Dims{1} && var.dtype() == DType::kFloat32,
                   "optimizer learning rate: variable '", var.name(),
                   "' must be a [1] float32 variable, got shape ", DimsToString(var.shape()),
                   " and dtype ", DTypeName(var.dtype()));
}

float LearningRate::value() const {
  FLOTILLA_CHECK(!scheduled(), InvalidArgument, "optimizer learning rate is the scheduled variable '",
                 var_.name(), "', not a constant");
  return value_;
}

Variable Optimizer::ConstantRate(Block& main, float value) {
  std::string name = UniqueName("learning_rate");
  Block& startup = startup_->global_block();
  for (Block* block : {&main, &startup}) {
    VarDesc& v = block->CreateVar(name);
    v.shape = {1};
    v.dtype = DType::kFloat32;
    v.persistable = true;
    v.stop_gradient = true;
  }
  initializer::Constant(value).Append(startup, startup.Var(name));
  return Variable(&main, name);
}

Variable Optimizer::lr(const Variable& param) {
  const float multiplier = param.desc().learning_rate;
  if (multiplier == 1.0f) return lr_var_;
  auto it = scaled_lr_.find(multiplier);
  if (it != scaled_lr_.end() && it->second.block() == lr_var_.block()) return it->second;
  Block& main = *lr_var_.block();
  Variable scaled;
  if (learning_rate_.scheduled()) {
    const std::string name = UniqueName("learning_rate");
    VarDesc& v = main.CreateVar(name);
    v.shape = {1};
    v.dtype = DType::kFloat32;
    v.stop_gradient = true;
    main.AppendOp(OpDesc("scale")
                      .In("X", {lr_var_.name()})
                      .Out("Out", {name})
                      .Set("scale", multiplier)
                      .Set("bias", 0.0f)
                      .Set("bias_after_scale", true)
                      .Set(kOpRoleAttr, int32_t(kOpRoleLRSched)));
    scaled = Variable(&main, name);
  } else {
    scaled = ConstantRate(main, learning_rate_.value() * multiplier);
  }
  scaled_lr_[multiplier] = scaled;
  return scaled;
}

void Optimizer::CreateLearningRate(Block& main) {
  if (lr_var_.valid() && lr_var_.block() == &main) return;
  if (learning_rate_.scheduled()) {
    FLOTILLA_ENFORCE(learning_rate_.var().block() == &main, "optimizer ", type(),
                     ": scheduled learning rate '", learning_rate_.var().name(),
                     "' belongs to another program than the loss");
    lr_var_ = learning_rate_.var();
    return;
  }
  lr_var_ = ConstantRate(main, learning_rate_.value());
}

std::vector<OpDesc*> Optimizer::apply_gradients(const std::vector<ParamGrad>& params_grads) {
  std::vector<OpDesc*> ops;
  if (params_grads.empty()) return ops;
  if (startup_ == nullptr) startup_ = &default_startup_program();
  Block& block = *params_grads[0].first.block();
  CreateLearningRate(block);
  for (const auto& raw : params_grads) {
    ParamGrad pg = Regularize(raw);
    OpDesc& op = AppendUpdateOp(block, pg);
    op.Set(kOpRoleAttr, int32_t(kOpRoleOptimize));
    op.Set(kOpRoleVarAttr, std::vector<std::string>{pg.first.name(), pg.second.name()});
    ops.push_back(&op);
  }
  return ops;
}

ParamGrad Optimizer::Regularize(const ParamGrad& pg) const {
  regularizer::RegularizerPtr own = regularizer::ParamRegularizer(pg.first.desc());
  const regularizer::RegularizerPtr& reg = own ? own : regularization_;
  return {pg.first, regularizer::AppendRegularization(pg.first, pg.second, reg)};
}

Variable Optimizer::Accumulator(const Variable& param, const std::string& name, double value,
                                Dims shape) {
  std::string var_name = param.name() + "_" + name + "_0";
  if (shape.empty()) shape = param.shape();
  Block& main = *param.block();
  Block& startup = startup_->global_block();
  for (Block* block : {&main, &startup}) {
    VarDesc& v = block->CreateVar(var_name);
    v.shape = shape;
    v.dtype = param.dtype();
    v.persistable = true;
    v.stop_gradient = true;
  }
  initializer::Constant(value).Append(startup, startup.Var(var_name));
  return Variable(&main, var_name);
}

OpDesc& SGD::AppendUpdateOp(Block& block, const ParamGrad& pg) {
  const auto& [param, grad] = pg;
  return block.AppendOp(OpDesc("sgd")
                            .In("Param", {param.name()})
                            .In("Grad", {grad.name()})
                            .In("LearningRate", {lr(param).name()})
                            .Out("ParamOut", {param.name()}));
}

OpDesc& Momentum::AppendUpdateOp(Block& block, const ParamGrad& pg) {
  const auto& [param, grad] = pg;
  Variable velocity = Accumulator(param, "velocity", 0.0);
  return block.AppendOp(OpDesc("momentum")
                            .In("Param", {param.name()})
                            .In("Grad", {grad.name()})
                            .In("Velocity", {velocity.name()})
                            .In("LearningRate", {lr(param).name()})
                            .Out("ParamOut", {param.name()})
                            .Out("VelocityOut", {velocity.name()})
                            .Set("mu", momentum_)
                            .Set("use_nesterov", use_nesterov_));
}

OpDesc& Adam::AppendUpdateOp(Block& block, const ParamGrad& pg) {
  const auto& [param, grad] = pg;
  Variable m1 = Accumulator(param, "moment1", 0.0);
  Variable m2 = Accumulator(param, "moment2", 0.0);
  Variable b1 = Accumulator(param, "beta1_pow_acc", beta1_, {1});
  Variable b2 = Accumulator(param, "beta2_pow_acc", beta2_, {1});
  return block.AppendOp(OpDesc("adam")
                            .In("Param", {param.name()})
                            .In("Grad", {grad.name()})
                            .In("LearningRate", {lr(param).name()})
                            .In("Moment1", {m1.name()})
                            .In("Moment2", {m2.name()})
                            .In("Beta1Pow", {b1.name()})
                            .In("Beta2Pow", {b2.name()})
                            .Out("ParamOut", {param.name()})
                            .Out("Moment1Out", {m1.name()})
                            .Out("Moment2Out", {m2.name()})
                            .Out("Beta1PowOut", {b1.name()})
                            .Out("Beta2PowOut", {b2.name()})
                            .Set("beta1", beta1_)
                            .Set("beta2", beta2_)
                            .Set("epsilon", epsilon_));
}

OpDesc& Adagrad::AppendUpdateOp(Block& block, const ParamGrad& pg) {
  const auto& [param, grad] = pg;
  Variable moment = Accumulator(param, "moment", initial_);
  return block.AppendOp(OpDesc("adagrad")
                            .In("Param", {param.name()})
                            .In("Grad", {grad.name()})
                            .In("Moment", {moment.name()})
                            .In("LearningRate", {lr(param).name()})
                            .Out("ParamOut", {param.name()})
                            .Out("MomentOut", {moment.name()})
                            .Set("epsilon", epsilon_));
}

}  // namespace flotilla::optimizer
