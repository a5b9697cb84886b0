#include <gtest/gtest.h>

#include <cmath>

#include "framework/ops/kernel_test_util.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {

void AddSoftmaxGradChecks(GradCheckRegistry& registry) {
  registry.Add({.label = "softmax/3x5 last axis",
                .op = OpDesc("softmax").In("X", {"x"}).Out("Out", {"out"}),
                .inputs = {{"x", RandomTensor({3, 5}, -2, 2, 11)}},
                .check = {"x"}});
  registry.Add({.label = "softmax/2x3x4 axis 1",
                .op = OpDesc("softmax").In("X", {"x"}).Out("Out", {"out"}).Set("axis", int32_t{1}),
                .inputs = {{"x", RandomTensor({2, 3, 4}, -2, 2, 12)}},
                .check = {"x"}});
  registry.Add({.label = "softmax_with_cross_entropy/4x5 hard, one ignored",
                .op = OpDesc("softmax_with_cross_entropy")
                          .In("Logits", {"logits"})
                          .In("Label", {"label"})
                          .Out("Softmax", {"sm"})
                          .Out("Loss", {"loss"}),
                .inputs = {{"logits", RandomTensor({4, 5}, -2, 2, 13)},
                           {"label", Tensor::FromVector<int64_t>({3, 0, -100, 4}, {4, 1})}},
                .check = {"logits"},
                .outputs = {"loss"}});
  registry.Add({.label = "softmax_with_cross_entropy/3x4 soft",
                .op = OpDesc("softmax_with_cross_entropy")
                          .In("Logits", {"logits"})
                          .In("Label", {"label"})
                          .Out("Softmax", {"sm"})
                          .Out("Loss", {"loss"})
                          .Set("soft_label", true),
                .inputs = {{"logits", RandomTensor({3, 4}, -2, 2, 14)},
                           {"label", Tensor::FromVector<double>({.1, .2, .3, .4, 1, 0, 0, 0, .25, .25, .25, .25}, {3, 4})}},
                .check = {"logits"},
                .outputs = {"loss"}});
}

namespace {

OpDesc SwceOp() {
  return OpDesc("softmax_with_cross_entropy")
      .In("Logits", {"logits"})
      .In("Label", {"label"})
      .Out("Softmax", {"sm"})
      .Out("Loss", {"loss"});
}

TEST(SoftmaxOps, SoftmaxMatchesHandValuesAndSurvivesHugeLogits) {
  auto x = Tensor::FromVector<double>({1, 2, 3, 1000, 1000, 1000}, {2, 3});
  auto outs = RunOp(OpDesc("softmax").In("X", {"x"}).Out("Out", {"out"}), {{"x", x}});
  double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  ExpectValuesNear(outs.at("out"),
                   {std::exp(1.0) / z, std::exp(2.0) / z, std::exp(3.0) / z, 1 / 3.0, 1 / 3.0, 1 / 3.0},
                   1e-12, "softmax");
}

TEST(SoftmaxOps, SoftmaxFloat32AlongAxisZero) {
  auto x = Tensor::FromVector<float>({0, 1, std::log(3.f), 1}, {2, 2});
  auto outs = RunOp(OpDesc("softmax").In("X", {"x"}).Out("Out", {"out"}).Set("axis", int32_t{0}),
                    {{"x", x}});
  EXPECT_EQ(outs.at("out").dtype(), DType::kFloat32);
  ExpectValuesNear(outs.at("out"), {0.25, 0.5, 0.75, 0.5}, 1e-6, "softmax axis 0");
}

TEST(SoftmaxOps, SoftmaxRejectsAxisBeyondRank) {
  auto x = Tensor::FromVector<double>({1, 2}, {1, 2});
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunOp(OpDesc("softmax").In("X", {"x"}).Out("Out", {"out"}).Set("axis", int32_t{2}), {{"x", x}}); },
      {"softmax", "'axis'"});
}

TEST(SoftmaxOps, SwceLossIsLogSumExpMinusTargetLogit) {
  auto logits = Tensor::FromVector<double>({1, 2, 3, 1000, 0, -1000}, {2, 3});
  auto label = Tensor::FromVector<int64_t>({2, 1}, {2, 1});
  auto outs = RunOp(SwceOp(), {{"logits", logits}, {"label", label}});
  double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_EQ(outs.at("loss").dims(), (Dims{2, 1}));
  // Row 2 is confidently wrong: the loss is large but finite.
  ExpectValuesNear(outs.at("loss"), {lse - 3, 1000}, 1e-9, "loss");
  EXPECT_NEAR(outs.at("sm").ToVector<double>()[2], std::exp(3 - lse), 1e-12);
}

TEST(SoftmaxOps, SwceIgnoredRowHasZeroLossAndFloatWorks) {
  auto logits = Tensor::FromVector<float>({1, 2, 0, 0}, {2, 2});
  auto label = Tensor::FromVector<int64_t>({-100, 0}, {2, 1});
  auto outs = RunOp(SwceOp(), {{"logits", logits}, {"label", label}});
  ExpectValuesNear(outs.at("loss"), {0, std::log(2.0)}, 1e-6, "loss");
}

TEST(SoftmaxOps, SwceGradIsSoftmaxMinusOneHotTimesLossGrad) {
  Scope scope;
  SetTensor(scope, "sm", Tensor::FromVector<double>({.2, .3, .5, .6, .4, 0}, {2, 3}));
  SetTensor(scope, "label", Tensor::FromVector<int64_t>({2, 0}, {2, 1}));
  SetTensor(scope, "dloss", Tensor::FromVector<double>({2, -1}, {2, 1}));
  RunKernel(OpDesc("softmax_with_cross_entropy_grad")
                .In("Softmax", {"sm"})
                .In("Label", {"label"})
                .In("Loss@GRAD", {"dloss"})
                .Out("Logits@GRAD", {"dx"}),
            scope);
  ExpectValuesNear(scope.GetVar("dx").GetTensor(), {.4, .6, -1, .4, -.4, 0}, 1e-12, "dlogits");
}

TEST(SoftmaxOps, SwceRejectsLabelOutOfRange) {
  auto logits = Tensor::FromVector<double>({1, 2, 3}, {1, 3});
  auto label = Tensor::FromVector<int64_t>({5}, {1, 1});
  ExpectErrorMentions<InvalidArgument>([&] { RunOp(SwceOp(), {{"logits", logits}, {"label", label}}); },
                                       {"softmax_with_cross_entropy", "label 5", "[0, 3)"});
}

TEST(SoftmaxOps, SwceRejectsWrongLabelCountAndType) {
  auto logits = Tensor::FromVector<double>({1, 2, 3, 4}, {2, 2});
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunOp(SwceOp(), {{"logits", logits}, {"label", Tensor::FromVector<int64_t>({0, 1, 1}, {3, 1})}}); },
      {"Label", "[3, 1]"});
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunOp(SwceOp(), {{"logits", logits}, {"label", Tensor::FromVector<int32_t>({0, 1}, {2, 1})}}); },
      {"Label", "int64"});
}

TEST(SoftmaxOps, SwceRejectsNonLastAxis) {
  auto logits = Tensor::FromVector<double>({1, 2, 3, 4}, {2, 2});
  auto label = Tensor::FromVector<int64_t>({0, 1}, {2, 1});
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunOp(SwceOp().Set("axis", int32_t{0}), {{"logits", logits}, {"label", label}}); },
      {"'axis'"});
}

}  // namespace
}  // namespace flotilla::testing
