// Optimizers (Paddle's fluid.optimizer): minimize(loss) appends backward
// ops, then one update op per parameter, and returns both.
//
// minimize = backward + apply_gradients; distributed optimizers (fleet) call
// the two halves themselves and rewrite the gradients in between.
//
// `regularization` (Paddle's regularization=L2Decay(...)) decays every
// parameter without a ParamAttr::regularizer of its own; apply_gradients
// appends the decay ahead of the update ops (see flotilla/api/regularizer.h).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "flotilla/api/regularizer.h"
#include "flotilla/framework/backward.h"
#include "flotilla/framework/program.h"

namespace flotilla::optimizer {

// An optimizer's learning rate: a constant, which the startup program fills
// into a persistable [1] variable, or a [1] float32 variable of the main
// program that ops recompute every step (a schedule from
// flotilla/api/learning_rate_scheduler.h), which update ops then read
// directly. Implicit from both so optimizer::SGD(0.1f) and
// optimizer::SGD(layers::exponential_decay(0.1f, 10, 0.5f)) both work.
class LearningRate {
 public:
  LearningRate(float value) : value_(value) {}  // NOLINT(google-explicit-constructor)
  LearningRate(const Variable& var);            // NOLINT(google-explicit-constructor)

  bool scheduled() const { return var_.valid(); }
  // The constant rate; throws InvalidArgument when the rate is scheduled.
  float value() const;
  // The scheduled variable; invalid for a constant rate.
  const Variable& var() const { return var_; }

 private:
  float value_ = 0;
  Variable var_;
};

struct MinimizeResult {
  std::vector<OpDesc*> optimize_ops;
  std::vector<ParamGrad> params_grads;
};

class Optimizer {
 public:
  explicit Optimizer(LearningRate learning_rate, regularizer::RegularizerPtr regularization = nullptr)
      : learning_rate_(std::move(learning_rate)), regularization_(std::move(regularization)) {}
  virtual ~Optimizer() = default;

  // Appends backward and update ops to loss's program; the learning rate and
  // accumulators are created in `startup` (default: the default startup
  // program). Only `parameter_list` (default: every trainable parameter) is
  // updated; `no_grad_set` variables get no gradient.
  MinimizeResult minimize(const Variable& loss, Program* startup = nullptr,
                          const std::vector<std::string>& parameter_list = {},
                          const std::set<std::string>& no_grad_set = {});
  std::vector<ParamGrad> backward(const Variable& loss, Program* startup = nullptr,
                                  const std::vector<std::string>& parameter_list = {},
                                  const std::set<std::string>& no_grad_set = {});
  std::vector<OpDesc*> apply_gradients(const std::vector<ParamGrad>& params_grads);

  // The constant rate; throws InvalidArgument when the rate is scheduled.
  float learning_rate() const { return learning_rate_.value(); }
  bool scheduled_learning_rate() const { return learning_rate_.scheduled(); }
  // The [1] learning-rate variable the update ops read: the schedule's
  // variable, or (after minimize/apply_gradients) the persistable constant.
  const Variable& learning_rate_var() const {
    return learning_rate_.scheduled() ? learning_rate_.var() : lr_var_;
  }
  virtual std::string type() const = 0;

  // The global weight decay; null: none. Set before apply_gradients.
  const regularizer::RegularizerPtr& regularization() const { return regularization_; }
  Optimizer& set_regularization(regularizer::RegularizerPtr r) {
    regularization_ = std::move(r);
    return *this;
  }

 protected:
  // Appends the update op of one parameter.
  virtual OpDesc& AppendUpdateOp(Block& block, const ParamGrad& pg) = 0;
  // A persistable state variable named "<param>_<name>_0" of `shape`
  // (default: the parameter's), filled with `value` by the startup program.
  Variable Accumulator(const Variable& param, const std::string& name, double value,
                       Dims shape = {});
  Variable lr() const { return lr_var_; }
  // The rate `param`'s update reads: lr() times its ParamAttr learning_rate
  // multiplier. A constant rate gives another persistable constant (one per
  // multiplier); a scheduled one a scale op of the learning-rate role.
  Variable lr(const Variable& param);

 private:
  void CreateLearningRate(Block& main);
  // A persistable [1] float32 rate in `main`, set to `value` by the startup program.
  Variable ConstantRate(Block& main, float value);
  // pg with its gradient regularized by the parameter's own regularizer or
  // the global one; pg itself when neither applies.
  ParamGrad Regularize(const ParamGrad& pg) const;

  LearningRate learning_rate_;
  regularizer::RegularizerPtr regularization_;
  Program* startup_ = nullptr;
  Variable lr_var_;
  std::map<float, Variable> scaled_lr_;  // multiplier → its rate variable
};

class SGD : public Optimizer {
 public:
  explicit SGD(LearningRate learning_rate, regularizer::RegularizerPtr regularization = nullptr)
      : Optimizer(std::move(learning_rate), std::move(regularization)) {}
  std::string type() const override { return "sgd"; }

 protected:
  OpDesc& AppendUpdateOp(Block& block, const ParamGrad& pg) override;
};

class Momentum : public Optimizer {
 public:
  Momentum(LearningRate learning_rate, float momentum, bool use_nesterov = false,
           regularizer::RegularizerPtr regularization = nullptr)
      : Optimizer(std::move(learning_rate), std::move(regularization)),
        momentum_(momentum),
        use_nesterov_(use_nesterov) {}
  std::string type() const override { return "momentum"; }

 protected:
  OpDesc& AppendUpdateOp(Block& block, const ParamGrad& pg) override;

 private:
  float momentum_;
  bool use_nesterov_;
};

class Adam : public Optimizer {
 public:
  explicit Adam(LearningRate learning_rate = 0.001f, float beta1 = 0.9f, float beta2 = 0.999f,
                float epsilon = 1e-8f, regularizer::RegularizerPtr regularization = nullptr)
      : Optimizer(std::move(learning_rate), std::move(regularization)), beta1_(beta1), beta2_(beta2), epsilon_(epsilon) {}
  std::string type() const override { return "adam"; }

 protected:
  OpDesc& AppendUpdateOp(Block& block, const ParamGrad& pg) override;

 private:
  float beta1_, beta2_, epsilon_;
};

class Adagrad : public Optimizer {
 public:
  explicit Adagrad(LearningRate learning_rate, float epsilon = 1e-6f,
                   float initial_accumulator_value = 0.0f,
                   regularizer::RegularizerPtr regularization = nullptr)
      : Optimizer(std::move(learning_rate), std::move(regularization)), epsilon_(epsilon), initial_(initial_accumulator_value) {}
  std::string type() const override { return "adagrad"; }

 protected:
  OpDesc& AppendUpdateOp(Block& block, const ParamGrad& pg) override;

 private:
  float epsilon_, initial_;
};

}  // namespace flotilla::optimizer
