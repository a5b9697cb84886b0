// Walks the op registry: every op must have a CPU kernel and shape
// inference, and every differentiable op a passing gradient check.
#include <gtest/gtest.h>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {
namespace {

GradCheckRegistry AllCases() {
  GradCheckRegistry registry;
  AddBasicGradChecks(registry);
  AddMathGradChecks(registry);
  AddElementwiseGradChecks(registry);
  AddActivationGradChecks(registry);
  AddReduceGradChecks(registry);
  AddTensorGradChecks(registry);
  AddSoftmaxGradChecks(registry);
  AddLossGradChecks(registry);
  AddLookupTableGradChecks(registry);
  AddMetricGradChecks(registry);
  AddOptimizerGradChecks(registry);
  AddLearningRateGradChecks(registry);
  AddConvGradChecks(registry);
  AddPoolGradChecks(registry);
  AddBatchNormGradChecks(registry);
  AddNormGradChecks(registry);
  AddDropoutGradChecks(registry);
  AddLayoutGradChecks(registry);
  AddLabelGradChecks(registry);
  AddSequenceGradChecks(registry);
  AddSequencePadGradChecks(registry);
  AddSequenceConvGradChecks(registry);
  AddLoDGradChecks(registry);
  AddSimilarityGradChecks(registry);
  return registry;
}

TEST(OpsCoverage, EveryOpHasKernelShapeInferenceAndGradCheck) {
  RegisterAllOps();
  GradCheckRegistry cases = AllCases();
  auto& registry = OpRegistry::Global();
  for (const auto& type : registry.Types()) {
    const OpInfo& info = registry.Get(type);
    EXPECT_TRUE(info.kernels.count(Place::Kind::kCPU)) << "op '" << type << "' has no CPU kernel";
    EXPECT_TRUE(static_cast<bool>(info.infer_shape)) << "op '" << type << "' has no shape inference";
    if (info.differentiable()) {
      EXPECT_TRUE(cases.cases().count(type)) << "differentiable op '" << type
                                             << "' has no gradient check";
    }
  }
  for (const auto& [type, list] : cases.cases()) {
    EXPECT_TRUE(registry.Find(type) != nullptr) << "gradient check for unregistered op '" << type << "'";
  }
}

TEST(OpsCoverage, GradientsMatchFiniteDifferences) {
  RegisterAllOps();
  GradCheckRegistry cases = AllCases();
  for (const auto& [type, list] : cases.cases()) {
    for (const auto& c : list) {
      SCOPED_TRACE(c.label);
      RunGradCheck(c);
    }
  }
}

}  // namespace
}  // namespace flotilla::testing
