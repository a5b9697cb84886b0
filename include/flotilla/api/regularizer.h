// Weight decay (Paddle's fluid.regularizer): before a parameter's update, its
// gradient g becomes g + coeff·p (L2Decay) or g + coeff·sign(p) (L1Decay).
//
// An optimizer's `regularization` applies to every parameter; a parameter's
// ParamAttr::regularizer overrides it. The regularized gradient is a new
// variable "<grad>@REGULARIZED" computed by ops with the Backward role, which
// the update op reads and names in its op_role_var. Sparse (SelectedRows)
// gradients are left unregularized.
#pragma once

#include <memory>
#include <string>

#include "flotilla/framework/program.h"

namespace flotilla::regularizer {

inline constexpr const char* kRegularizedSuffix = "@REGULARIZED";

// Immutable; shared between optimizers and parameter attributes.
class WeightDecayRegularizer {
 public:
  explicit WeightDecayRegularizer(float coeff) : coeff_(coeff) {}
  virtual ~WeightDecayRegularizer() = default;

  // "l2_decay" or "l1_decay": what a parameter's VarDesc records.
  virtual std::string type() const = 0;
  float coeff() const { return coeff_; }
  // Appends to `block` the ops computing the decay term of `param` into a
  // new variable `name` (param's shape and dtype) and returns it.
  virtual Variable AppendDecay(Block& block, const Variable& param, const std::string& name) const = 0;

 private:
  float coeff_;
};

using RegularizerPtr = std::shared_ptr<const WeightDecayRegularizer>;

class L2DecayRegularizer : public WeightDecayRegularizer {
 public:
  using WeightDecayRegularizer::WeightDecayRegularizer;
  std::string type() const override { return "l2_decay"; }
  Variable AppendDecay(Block& block, const Variable& param, const std::string& name) const override;
};

class L1DecayRegularizer : public WeightDecayRegularizer {
 public:
  using WeightDecayRegularizer::WeightDecayRegularizer;
  std::string type() const override { return "l1_decay"; }
  Variable AppendDecay(Block& block, const Variable& param, const std::string& name) const override;
};

// Paddle's spellings: regularizer::L2Decay(1e-4f).
RegularizerPtr L2Decay(float coeff);
RegularizerPtr L1Decay(float coeff);

// Records `reg` on a parameter's VarDesc (null clears it).
void SetParamRegularizer(VarDesc& param, const RegularizerPtr& reg);
// The regularizer recorded on a parameter, or null. Throws InvalidArgument
// naming the parameter when the recorded type is unknown.
RegularizerPtr ParamRegularizer(const VarDesc& param);

// Appends to grad's block the ops computing grad + decay(param) into a new
// variable "<grad>@REGULARIZED" and returns it; returns grad itself when
// `reg` is null or grad is a SelectedRows variable. The ops carry op_role
// Backward.
Variable AppendRegularization(const Variable& param, const Variable& grad, const RegularizerPtr& reg);

}  // namespace flotilla::regularizer
