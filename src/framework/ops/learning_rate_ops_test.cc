// increment and lr_schedule kernels, and the errors of bad schedules. The
// value of every schedule kind over many steps is checked end to end, through
// the layers that build it, in src/api/learning_rate_scheduler_test.cc.
#include <gtest/gtest.h>

#include <cmath>

#include "flotilla/framework/program.h"
#include "framework/ops/kernel_test_util.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {

// The step counter and schedules are not differentiable.
void AddLearningRateGradChecks(GradCheckRegistry& registry) {}

namespace {

float Scalar(Scope& scope, const std::string& name) {
  return static_cast<float>(Values(scope.GetVar(name).GetTensor()).at(0));
}

OpDesc Schedule(const std::string& kind) {
  return OpDesc("lr_schedule").In("Step", {"step"}).Out("Out", {"lr"}).Set("kind", kind);
}

TEST(LearningRateOps, IncrementInt64InPlace) {
  Scope scope;
  SetTensor(scope, "c", Tensor::FromVector<int64_t>({-1}, {1}));
  OpDesc op = OpDesc("increment").In("X", {"c"}).Out("Out", {"c"});
  RunKernel(op, scope);
  RunKernel(op, scope);
  const Tensor& c = scope.GetVar("c").GetTensor();
  EXPECT_EQ(c.dtype(), DType::kInt64);
  EXPECT_EQ(c.data<int64_t>()[0], 1);
}

TEST(LearningRateOps, IncrementFloatByStep) {
  Scope scope;
  SetTensor(scope, "x", Tensor::FromVector<float>({1.5f}, {1}));
  RunKernel(OpDesc("increment").In("X", {"x"}).Out("Out", {"y"}).Set("step", 2.25f), scope);
  EXPECT_FLOAT_EQ(Scalar(scope, "y"), 3.75f);
  EXPECT_FLOAT_EQ(Scalar(scope, "x"), 1.5f);
}

TEST(LearningRateOps, IncrementRejectsNonScalar) {
  RegisterAllOps();
  Program program;
  program.global_block().CreateVar("x").shape = {2};
  ExpectErrorMentions<InvalidArgument>(
      [&] {
        program.global_block().AppendOp(OpDesc("increment").In("X", {"x"}).Out("Out", {"x"}));
      },
      {"increment", "X", "[1]"});
}

TEST(LearningRateOps, ExponentialStaircaseFromInt64Step) {
  Scope scope;
  SetTensor(scope, "step", Tensor::FromVector<int64_t>({7}, {1}));
  RunKernel(Schedule("exponential_decay")
                .Set("learning_rate", 0.5f)
                .Set("decay_steps", int64_t{3})
                .Set("decay_rate", 0.5f)
                .Set("staircase", true),
            scope);
  EXPECT_FLOAT_EQ(Scalar(scope, "lr"), 0.125f);  // 0.5 * 0.5^floor(7/3)
  EXPECT_EQ(scope.GetVar("lr").GetTensor().dtype(), DType::kFloat32);
}

TEST(LearningRateOps, LinearWarmupReadsLearningRateInput) {
  Scope scope;
  SetTensor(scope, "base", Tensor::FromVector<float>({0.3f}, {1}));
  OpDesc op = Schedule("linear_lr_warmup")
                  .In("LearningRate", {"base"})
                  .Set("warmup_steps", int64_t{4})
                  .Set("start_lr", 0.0f)
                  .Set("end_lr", 0.2f);
  SetTensor(scope, "step", Tensor::FromVector<int64_t>({1}, {1}));
  RunKernel(op, scope);
  EXPECT_FLOAT_EQ(Scalar(scope, "lr"), 0.05f);
  SetTensor(scope, "step", Tensor::FromVector<int64_t>({4}, {1}));
  RunKernel(op, scope);
  EXPECT_FLOAT_EQ(Scalar(scope, "lr"), 0.3f);
}

// Appending the op runs its shape inference, which checks the attributes.
void ExpectBadSchedule(OpDesc op, const std::string& attr) {
  RegisterAllOps();
  Program program;
  VarDesc& step = program.global_block().CreateVar("step");
  step.shape = {1};
  step.dtype = DType::kInt64;
  SCOPED_TRACE(attr);
  ExpectErrorMentions<InvalidArgument>([&] { program.global_block().AppendOp(op); },
                                       {"lr_schedule", "'" + attr + "'"});
  Scope scope;
  SetTensor(scope, "step", Tensor::FromVector<int64_t>({0}, {1}));
  ExpectErrorMentions<InvalidArgument>([&] { RunKernel(op, scope); },
                                       {"lr_schedule", "'" + attr + "'"});
}

TEST(LearningRateOps, BadAttributesNameTheAttribute) {
  ExpectBadSchedule(
      Schedule("exponential_decay").Set("decay_steps", int64_t{0}).Set("decay_rate", 0.5f),
      "decay_steps");
  ExpectBadSchedule(Schedule("polynomial_decay").Set("decay_steps", int64_t{-2}), "decay_steps");
  ExpectBadSchedule(Schedule("piecewise_decay")
                        .Set("boundaries", std::vector<int64_t>{2, 4})
                        .Set("values", std::vector<float>{1, 2}),
                    "values");
  ExpectBadSchedule(Schedule("piecewise_decay")
                        .Set("boundaries", std::vector<int64_t>{4, 2})
                        .Set("values", std::vector<float>{1, 2, 3}),
                    "boundaries");
  ExpectBadSchedule(
      Schedule("cosine_decay").Set("step_each_epoch", int64_t{0}).Set("epochs", int64_t{3}),
      "step_each_epoch");
  ExpectBadSchedule(Schedule("noam_decay").Set("d_model", 8.0f).Set("warmup_steps", int64_t{0}),
                    "warmup_steps");
  ExpectBadSchedule(Schedule("step_decay"), "kind");
  ExpectBadSchedule(Schedule("inverse_time_decay"), "decay_steps");  // missing
}

}  // namespace
}  // namespace flotilla::testing
