#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flotilla/common/error.h"
#include "flotilla/framework/op_registry.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

OpDesc Unary(const std::string& type) { return OpDesc(type).In("X", {"x"}).Out("Out", {"out"}); }

OpDesc Scale(float scale, float bias, bool bias_after_scale) {
  return Unary("scale").Set("scale", scale).Set("bias", bias)
      .Set("bias_after_scale", bias_after_scale);
}

// Values well away from relu's kink at 0.
Tensor AwayFromZero() {
  return Tensor::FromVector<double>({-0.9, -0.5, -0.2, 0.3, 0.6, 1.7}, {2, 3});
}

}  // namespace

void AddActivationGradChecks(GradCheckRegistry& registry) {
  registry.Add({.label = "relu/2x3", .op = Unary("relu"), .inputs = {{"x", AwayFromZero()}},
                .check = {"x"}});
  for (const char* type : {"tanh", "sigmoid", "square", "softsign"}) {
    registry.Add({.label = std::string(type) + "/3x4",
                  .op = Unary(type),
                  .inputs = {{"x", RandomTensor({3, 4}, -2, 2, 5)}},
                  .check = {"x"}});
  }
  registry.Add({.label = "relu6/2x3",
                .op = Unary("relu6"),
                .inputs = {{"x", Tensor::FromVector<double>({-0.9, 0.5, 3.2, 5.5, 6.5, 8}, {2, 3})}},
                .check = {"x"}});
  registry.Add({.label = "hard_swish/2x4",
                .op = Unary("hard_swish"),
                .inputs = {{"x", Tensor::FromVector<double>({-4, -2.5, -1, 0.3, 1.7, 2.9, 3.5, 5}, {2, 4})}},
                .check = {"x"}});
  registry.Add({.label = "scale/bias after scale",
                .op = Scale(-2.5f, 0.5f, true),
                .inputs = {{"x", RandomTensor({3, 2})}},
                .check = {"x"}});
  registry.Add({.label = "scale/bias before scale",
                .op = Scale(3.0f, 1.0f, false),
                .inputs = {{"x", RandomTensor({5})}},
                .check = {"x"}});
}

TEST(ActivationOps, ReluClampsNegatives) {
  auto out = RunOp(Unary("relu"), {{"x", Tensor::FromVector<float>({-1, 0, 2.5f}, {3})}}).at("out");
  EXPECT_EQ(out.ToVector<float>(), (std::vector<float>{0, 0, 2.5f}));
}

TEST(ActivationOps, SoftsignValues) {
  auto out = RunOp(Unary("softsign"), {{"x", Tensor::FromVector<double>({-3, 0, 1, 9}, {2, 2})}}).at("out");
  EXPECT_EQ(out.ToVector<double>(), (std::vector<double>{-0.75, 0, 0.5, 0.9}));
  EXPECT_EQ(out.dims(), (Dims{2, 2}));
}

TEST(ActivationOps, SignGivesMinusOneZeroOrOne) {
  auto f = RunOp(Unary("sign"), {{"x", Tensor::FromVector<float>({-2.5f, 0, 1e-30f, 7}, {2, 2})}});
  EXPECT_EQ(f.at("out").ToVector<float>(), (std::vector<float>{-1, 0, 1, 1}));
  EXPECT_EQ(f.at("out").dims(), (Dims{2, 2}));
  auto d = RunOp(Unary("sign"), {{"x", Tensor::FromVector<double>({-0.0, -3}, {2})}});
  EXPECT_EQ(d.at("out").ToVector<double>(), (std::vector<double>{0, -1}));
}

TEST(ActivationOps, Relu6AndHardSwishValues) {
  auto x = Tensor::FromVector<double>({-4, -1, 2, 7}, {4});
  EXPECT_EQ(RunOp(Unary("relu6"), {{"x", x}}).at("out").ToVector<double>(), (std::vector<double>{0, 0, 2, 6}));
  auto hs = RunOp(Unary("hard_swish"), {{"x", x}}).at("out").ToVector<double>();
  EXPECT_DOUBLE_EQ(hs[0], 0);
  EXPECT_DOUBLE_EQ(hs[1], -1.0 * 2 / 6);
  EXPECT_DOUBLE_EQ(hs[2], 2.0 * 5 / 6);
  EXPECT_DOUBLE_EQ(hs[3], 7);
}

TEST(ActivationOps, SignIsNotDifferentiable) {
  RegisterAllOps();
  EXPECT_FALSE(OpRegistry::Global().Get("sign").differentiable());
}

TEST(ActivationOps, SigmoidAndSquareMatchFormulas) {
  auto x = Tensor::FromVector<double>({-2, 0, 3}, {3});
  auto sig = RunOp(Unary("sigmoid"), {{"x", x}}).at("out").ToVector<double>();
  EXPECT_DOUBLE_EQ(sig[0], 1 / (1 + std::exp(2.0)));
  EXPECT_DOUBLE_EQ(sig[1], 0.5);
  EXPECT_DOUBLE_EQ(sig[2], 1 / (1 + std::exp(-3.0)));
  auto sq = RunOp(Unary("square"), {{"x", x}}).at("out").ToVector<double>();
  EXPECT_EQ(sq, (std::vector<double>{4, 0, 9}));
}

TEST(ActivationOps, FloatTanhStaysWithinFewUlpOfLibm) {
  std::vector<float> xs;
  for (int i = -20000; i <= 20000; ++i) xs.push_back(static_cast<float>(i) * 1e-3f);
  xs.push_back(1e-20f);
  xs.push_back(-50.0f);
  auto out = RunOp(Unary("tanh"), {{"x", Tensor::FromVector<float>(xs, {int64_t(xs.size())})}})
                 .at("out").ToVector<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    double expected = std::tanh(static_cast<double>(xs[i]));
    ASSERT_NEAR(out[i], expected, 1e-6 * std::max(1e-20, std::abs(expected)) + 1e-30)
        << "tanh(" << xs[i] << ")";
  }
}

TEST(ActivationOps, FloatTanhKeepsNaNAndSaturates) {
  auto x = Tensor::FromVector<float>({NAN, INFINITY, -INFINITY}, {3});
  auto out = RunOp(Unary("tanh"), {{"x", x}}).at("out").ToVector<float>();
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_NEAR(out[1], 1.0f, 1e-6f);
  EXPECT_NEAR(out[2], -1.0f, 1e-6f);
}

TEST(ActivationOps, DoubleTanhIsExact) {
  auto out = RunOp(Unary("tanh"), {{"x", Tensor::FromVector<double>({0.3, -4}, {2})}}).at("out");
  EXPECT_EQ(out.ToVector<double>(), (std::vector<double>{std::tanh(0.3), std::tanh(-4.0)}));
}

TEST(ActivationOps, ReluTanhSigmoidGradientsReadOutNotX) {
  for (const char* type : {"relu", "tanh", "sigmoid"}) {
    auto grads = OpRegistry::Global().Get(type).grad_maker(Unary(type));
    ASSERT_EQ(grads.size(), 1u);
    EXPECT_TRUE(grads[0].HasInput("Out")) << type;
    EXPECT_FALSE(grads[0].HasInput("X")) << type;
  }
  auto square = OpRegistry::Global().Get("square").grad_maker(Unary("square"));
  EXPECT_TRUE(square[0].HasInput("X"));
}

TEST(ActivationOps, ScaleAppliesBiasBeforeOrAfter) {
  auto x = Tensor::FromVector<double>({1, 2}, {2});
  EXPECT_EQ(RunOp(Scale(2, 1, true), {{"x", x}}).at("out").ToVector<double>(),
            (std::vector<double>{3, 5}));
  EXPECT_EQ(RunOp(Scale(2, 1, false), {{"x", x}}).at("out").ToVector<double>(),
            (std::vector<double>{4, 6}));
}

TEST(ActivationOps, ScaleHandlesIntegers) {
  auto x = Tensor::FromVector<int64_t>({1, -2, 3}, {3});
  EXPECT_THAT(RunOp(Scale(3, 1, true), {{"x", x}}).at("out").ToVector<int64_t>(),
              ElementsAre(4, -5, 10));
}

TEST(ActivationOps, ScaleGradientIsAScaleOpWithoutBias) {
  auto grads = OpRegistry::Global().Get("scale").grad_maker(Scale(-2, 7, true));
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_EQ(grads[0].type, "scale");
  EXPECT_FLOAT_EQ(grads[0].Attr<float>("scale"), -2.0f);
  EXPECT_FLOAT_EQ(grads[0].Attr<float>("bias"), 0.0f);
}

TEST(ActivationOps, RejectsIntegerInputToFloatActivation) {
  auto x = Tensor::FromVector<int32_t>({1, 2}, {2});
  EXPECT_THAT([&] { RunOp(Unary("tanh"), {{"x", x}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("int32")));
}

}  // namespace flotilla::testing
