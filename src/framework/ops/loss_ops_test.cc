#include <gtest/gtest.h>

#include <cmath>

#include "framework/ops/kernel_test_util.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {

void AddLossGradChecks(GradCheckRegistry& registry) {
  registry.Add({.label = "cross_entropy/3x4 hard, one ignored",
                .op = OpDesc("cross_entropy").In("X", {"x"}).In("Label", {"label"}).Out("Y", {"y"}),
                .inputs = {{"x", RandomTensor({3, 4}, 0.1, 0.9, 21)},
                           {"label", Tensor::FromVector<int64_t>({1, -100, 3}, {3, 1})}},
                .check = {"x"}});
  registry.Add({.label = "cross_entropy/2x3 soft",
                .op = OpDesc("cross_entropy")
                          .In("X", {"x"})
                          .In("Label", {"label"})
                          .Out("Y", {"y"})
                          .Set("soft_label", true),
                .inputs = {{"x", RandomTensor({2, 3}, 0.1, 0.9, 22)},
                           {"label", Tensor::FromVector<double>({.2, .3, .5, 0, 1, 0}, {2, 3})}},
                .check = {"x"}});
  registry.Add({.label = "sigmoid_cross_entropy_with_logits/3x4",
                .op = OpDesc("sigmoid_cross_entropy_with_logits")
                          .In("X", {"x"})
                          .In("Label", {"label"})
                          .Out("Out", {"out"}),
                .inputs = {{"x", RandomTensor({3, 4}, -3, 3, 23)}, {"label", RandomTensor({3, 4}, 0, 1, 24)}},
                .check = {"x"}});
  registry.Add({.label = "sigmoid_cross_entropy_with_logits/2x2 normalize, one ignored",
                .op = OpDesc("sigmoid_cross_entropy_with_logits")
                          .In("X", {"x"})
                          .In("Label", {"label"})
                          .Out("Out", {"out"})
                          .Set("normalize", true),
                .inputs = {{"x", RandomTensor({2, 2}, -3, 3, 25)},
                           {"label", Tensor::FromVector<double>({1, 0, -100, 1}, {2, 2})}},
                .check = {"x"}});
  registry.Add({.label = "log_loss/4x1 soft labels",
                .op = OpDesc("log_loss")
                          .In("Predicted", {"p"})
                          .In("Labels", {"z"})
                          .Out("Loss", {"loss"})
                          .Set("epsilon", 1e-4f),
                .inputs = {{"p", RandomTensor({4, 1}, 0.1, 0.9, 26)}, {"z", RandomTensor({4, 1}, 0, 1, 27)}},
                .check = {"p"}});
}

namespace {

OpDesc CeOp() { return OpDesc("cross_entropy").In("X", {"x"}).In("Label", {"label"}).Out("Y", {"y"}); }

OpDesc SigmoidCeOp() {
  return OpDesc("sigmoid_cross_entropy_with_logits").In("X", {"x"}).In("Label", {"label"}).Out("Out", {"out"});
}

TEST(LossOps, CrossEntropyIsMinusLogOfLabelProbability) {
  auto x = Tensor::FromVector<double>({.2, .8, .5, .5, .1, .9}, {3, 2});
  auto label = Tensor::FromVector<int64_t>({1, 0, -100}, {3, 1});
  auto outs = RunOp(CeOp(), {{"x", x}, {"label", label}});
  EXPECT_EQ(outs.at("y").dims(), (Dims{3, 1}));
  ExpectValuesNear(outs.at("y"), {-std::log(.8), -std::log(.5), 0}, 1e-12, "y");
}

TEST(LossOps, CrossEntropyClipsZeroProbability) {
  auto x = Tensor::FromVector<float>({1, 0}, {1, 2});
  auto outs = RunOp(CeOp(), {{"x", x}, {"label", Tensor::FromVector<int64_t>({1}, {1, 1})}});
  double y = outs.at("y").ToVector<float>()[0];
  EXPECT_TRUE(std::isfinite(y));
  EXPECT_NEAR(y, -std::log(1e-20), 1e-3);
}

TEST(LossOps, CrossEntropySoftLabelSumsOverClasses) {
  auto x = Tensor::FromVector<double>({.25, .75}, {1, 2});
  auto label = Tensor::FromVector<double>({.5, .5}, {1, 2});
  auto outs = RunOp(CeOp().Set("soft_label", true), {{"x", x}, {"label", label}});
  ExpectValuesNear(outs.at("y"), {-.5 * std::log(.25) - .5 * std::log(.75)}, 1e-12, "y");
}

TEST(LossOps, CrossEntropyGradTouchesOnlyTheLabel) {
  Scope scope;
  SetTensor(scope, "x", Tensor::FromVector<double>({.2, .8, .5, .5}, {2, 2}));
  SetTensor(scope, "label", Tensor::FromVector<int64_t>({1, -100}, {2, 1}));
  SetTensor(scope, "dy", Tensor::FromVector<double>({2, 3}, {2, 1}));
  RunKernel(OpDesc("cross_entropy_grad").In("X", {"x"}).In("Label", {"label"}).In("Y@GRAD", {"dy"})
                .Out("X@GRAD", {"dx"}), scope);
  ExpectValuesNear(scope.GetVar("dx").GetTensor(), {0, -2 / .8, 0, 0}, 1e-12, "dx");
}

TEST(LossOps, CrossEntropyRejectsBadLabels) {
  auto x = Tensor::FromVector<double>({.5, .5}, {1, 2});
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunOp(CeOp(), {{"x", x}, {"label", Tensor::FromVector<int64_t>({2}, {1, 1})}}); },
      {"cross_entropy", "label 2", "[0, 2)"});
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunOp(CeOp(), {{"x", x}, {"label", Tensor::FromVector<double>({1}, {1, 1})}}); },
      {"Label", "int64"});
}

TEST(LossOps, SigmoidCeMatchesLogisticLossWithoutOverflow) {
  auto x = Tensor::FromVector<double>({0, 100, -100, 2, 1}, {5});
  auto label = Tensor::FromVector<double>({1, 0, 0, .25, -100}, {5});
  auto outs = RunOp(SigmoidCeOp(), {{"x", x}, {"label", label}});
  double s2 = 1 / (1 + std::exp(-2.0));
  ExpectValuesNear(outs.at("out"),
                   {std::log(2.0), 100, std::exp(-100.0), -.25 * std::log(s2) - .75 * std::log(1 - s2), 0},
                   1e-12, "out");
}

TEST(LossOps, SigmoidCeNormalizeDividesByKeptLabels) {
  auto x = Tensor::FromVector<float>({0, 0, 0}, {3});
  auto label = Tensor::FromVector<float>({1, -100, 0}, {3});
  auto outs = RunOp(SigmoidCeOp().Set("normalize", true), {{"x", x}, {"label", label}});
  ExpectValuesNear(outs.at("out"), {std::log(2.0) / 2, 0, std::log(2.0) / 2}, 1e-6, "out");
}

TEST(LossOps, SigmoidCeGradIsSigmoidMinusLabel) {
  Scope scope;
  SetTensor(scope, "x", Tensor::FromVector<double>({0, std::log(3.0), 5}, {3}));
  SetTensor(scope, "label", Tensor::FromVector<double>({1, 0, -100}, {3}));
  SetTensor(scope, "dout", Tensor::FromVector<double>({2, 1, 1}, {3}));
  RunKernel(OpDesc("sigmoid_cross_entropy_with_logits_grad").In("X", {"x"}).In("Label", {"label"})
                .In("Out@GRAD", {"dout"}).Out("X@GRAD", {"dx"}), scope);
  ExpectValuesNear(scope.GetVar("dx").GetTensor(), {-1, .75, 0}, 1e-12, "dx");
}

TEST(LossOps, LogLossIsMinusLogLikelihood) {
  OpDesc op = OpDesc("log_loss").In("Predicted", {"p"}).In("Labels", {"z"}).Out("Loss", {"loss"});
  auto outs = RunOp(op, {{"p", Tensor::FromVector<double>({0.9, 0.2, 0.5}, {3, 1})},
                         {"z", Tensor::FromVector<double>({1, 0, 0.25}, {3, 1})}});
  const double eps = 1e-4;
  ExpectValuesNear(outs.at("loss"),
                   {-std::log(0.9 + eps), -std::log(0.8 + eps),
                    -0.25 * std::log(0.5 + eps) - 0.75 * std::log(0.5 + eps)},
                   1e-6, "loss");
  ExpectErrorMentions<InvalidArgument>(
      [&] {
        RunOp(op, {{"p", Tensor::FromVector<double>({0.5, 0.5}, {2, 1})},
                   {"z", Tensor::FromVector<double>({1}, {1, 1})}});
      },
      {"log_loss", "Labels"});
}

TEST(LossOps, SigmoidCeRejectsMismatchedLabel) {
  auto x = Tensor::FromVector<double>({0, 0}, {2});
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunOp(SigmoidCeOp(), {{"x", x}, {"label", Tensor::FromVector<double>({0, 0, 1}, {3})}}); },
      {"sigmoid_cross_entropy_with_logits", "Label", "[3]", "[2]"});
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunOp(SigmoidCeOp(), {{"x", x}, {"label", Tensor::FromVector<float>({0, 1}, {2})}}); },
      {"Label", "float64"});
}

}  // namespace
}  // namespace flotilla::testing
