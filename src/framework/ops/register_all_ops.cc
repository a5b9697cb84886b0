#include <mutex>

#include "flotilla/framework/op_registry.h"
#include "framework/ops/ops.h"

namespace flotilla {

void RegisterAllOps() {
  static std::once_flag once;
  std::call_once(once, [] {
    ops::RegisterBasicOps();
    ops::RegisterMathOps();
    ops::RegisterElementwiseOps();
    ops::RegisterActivationOps();
    ops::RegisterReduceOps();
    ops::RegisterTensorOps();
    ops::RegisterSoftmaxOps();
    ops::RegisterLossOps();
    ops::RegisterLookupTableOps();
    ops::RegisterMetricOps();
    ops::RegisterOptimizerOps();
    ops::RegisterLearningRateOps();
    ops::RegisterConvOps();
    ops::RegisterPoolOps();
    ops::RegisterBatchNormOps();
    ops::RegisterNormOps();
    ops::RegisterDropoutOps();
    ops::RegisterLayoutOps();
    ops::RegisterLabelOps();
    ops::RegisterSequenceOps();
    ops::RegisterSequencePadOps();
    ops::RegisterSequenceConvOps();
    ops::RegisterLoDOps();
    ops::RegisterSimilarityOps();
  });
}

}  // namespace flotilla
