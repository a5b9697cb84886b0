// Finite-difference gradient checks for ops.
//
// A GradCheckCase is one op with concrete inputs. RunGradCheck builds a
// program holding the op, feeds random upstream gradients G_o for each float
// output o, and compares the analytic gradient of L = Σ_o Σ_i G_o[i]·o[i]
// (from the op's gradient ops, via backward) with central differences of L,
// element by element. Use float64 inputs: differences of float32 are too noisy.
//
// Every differentiable op must have at least one case; ops_coverage_test
// walks the registry and fails otherwise.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "flotilla/core/tensor.h"
#include "flotilla/framework/desc.h"

namespace flotilla::testing {

struct GradCheckCase {
  std::string label;                      // e.g. "mul/2x3*3x4"
  OpDesc op;                              // inputs/outputs name variables
  std::map<std::string, Tensor> inputs;   // every input variable's value
  std::vector<std::string> check;         // input variables to differentiate
  // Outputs forming L; empty = every float output of the op.
  std::vector<std::string> outputs;
  double delta = 1e-5;                    // finite-difference step
  double atol = 1e-6;
  double rtol = 1e-4;
};

class GradCheckRegistry {
 public:
  void Add(GradCheckCase c) { cases_[c.op.type].push_back(std::move(c)); }
  const std::map<std::string, std::vector<GradCheckCase>>& cases() const { return cases_; }

 private:
  std::map<std::string, std::vector<GradCheckCase>> cases_;
};

// Runs one case; reports mismatches through GoogleTest (ADD_FAILURE) with
// the case label, variable, element index and both values.
void RunGradCheck(const GradCheckCase& c);

// Runs `op` forward once on `inputs` and returns every output tensor by name.
std::map<std::string, Tensor> RunOp(const OpDesc& op, const std::map<std::string, Tensor>& inputs);

// Random tensor in [lo, hi) with a fixed seed.
Tensor RandomTensor(const Dims& dims, double lo = -1, double hi = 1, unsigned seed = 1,
                    DType dtype = DType::kFloat64);

// One per op family (ops/<family>_ops_test.cc).
void AddBasicGradChecks(GradCheckRegistry& registry);
void AddMathGradChecks(GradCheckRegistry& registry);
void AddElementwiseGradChecks(GradCheckRegistry& registry);
void AddActivationGradChecks(GradCheckRegistry& registry);
void AddReduceGradChecks(GradCheckRegistry& registry);
void AddTensorGradChecks(GradCheckRegistry& registry);
void AddSoftmaxGradChecks(GradCheckRegistry& registry);
void AddLossGradChecks(GradCheckRegistry& registry);
void AddLookupTableGradChecks(GradCheckRegistry& registry);
void AddMetricGradChecks(GradCheckRegistry& registry);
void AddOptimizerGradChecks(GradCheckRegistry& registry);
void AddLearningRateGradChecks(GradCheckRegistry& registry);
void AddConvGradChecks(GradCheckRegistry& registry);
void AddPoolGradChecks(GradCheckRegistry& registry);
void AddBatchNormGradChecks(GradCheckRegistry& registry);
void AddNormGradChecks(GradCheckRegistry& registry);
void AddDropoutGradChecks(GradCheckRegistry& registry);
void AddLayoutGradChecks(GradCheckRegistry& registry);
void AddLabelGradChecks(GradCheckRegistry& registry);
void AddSequenceGradChecks(GradCheckRegistry& registry);
void AddSequencePadGradChecks(GradCheckRegistry& registry);
void AddSequenceConvGradChecks(GradCheckRegistry& registry);
void AddLoDGradChecks(GradCheckRegistry& registry);
void AddSimilarityGradChecks(GradCheckRegistry& registry);

}  // namespace flotilla::testing
