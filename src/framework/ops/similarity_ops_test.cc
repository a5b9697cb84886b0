#include <cmath>

#include <gtest/gtest.h>

#include "flotilla/common/error.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {
namespace {

OpDesc CosSim(float eps = 0.0f) {
  return OpDesc("cos_sim")
      .In("X", {"x"})
      .In("Y", {"y"})
      .Out("Out", {"out"})
      .Out("XNorm", {"xn"})
      .Out("YNorm", {"yn"})
      .Set("eps", eps);
}

}  // namespace

void AddSimilarityGradChecks(GradCheckRegistry& registry) {
  registry.Add({.label = "cos_sim/3x4 rows",
                .op = CosSim(),
                .inputs = {{"x", RandomTensor({3, 4}, -1, 1, 1)}, {"y", RandomTensor({3, 4}, -1, 1, 2)}},
                .check = {"x", "y"},
                .outputs = {"out"}});
  registry.Add({.label = "cos_sim/one-row Y",
                .op = CosSim(),
                .inputs = {{"x", RandomTensor({3, 4}, -1, 1, 3)}, {"y", RandomTensor({1, 4}, -1, 1, 4)}},
                .check = {"x", "y"},
                .outputs = {"out"}});
  registry.Add({.label = "cos_sim/2x2x3 with eps",
                .op = CosSim(1e-8f),
                .inputs = {{"x", RandomTensor({2, 2, 3}, -1, 1, 5)}, {"y", RandomTensor({2, 2, 3}, -1, 1, 6)}},
                .check = {"x", "y"},
                .outputs = {"out"}});
  // A zero row of X: eps holds the denominator, the gradient is g y / eps.
  registry.Add({.label = "cos_sim/zero row under eps",
                .op = CosSim(1e-3f),
                .inputs = {{"x", Tensor::FromVector<double>({0, 0, 0, 0.5, -0.2, 0.9}, {2, 3})},
                           {"y", RandomTensor({2, 3}, -1, 1, 7)}},
                .check = {"x"},
                .outputs = {"out"}});
}

TEST(SimilarityOps, CosSimOfRows) {
  auto x = Tensor::FromVector<double>({1, 0, 3, 4, 2, 2}, {3, 2});
  auto y = Tensor::FromVector<double>({0, 1, 3, 4, -1, -1}, {3, 2});
  auto outs = RunOp(CosSim(), {{"x", x}, {"y", y}});
  const std::vector<double> out = outs.at("out").ToVector<double>();
  EXPECT_EQ(outs.at("out").dims(), (Dims{3, 1}));
  EXPECT_NEAR(out[0], 0, 1e-15);
  EXPECT_NEAR(out[1], 1, 1e-15);
  EXPECT_NEAR(out[2], -1, 1e-15);
  EXPECT_EQ(outs.at("xn").ToVector<double>(), (std::vector<double>{1, 5, std::sqrt(8.0)}));
}

TEST(SimilarityOps, OneRowYMeetsEveryRowOfX) {
  auto x = Tensor::FromVector<float>({1, 0, 0, 2, 3, 3}, {3, 2});
  auto y = Tensor::FromVector<float>({1, 1}, {1, 2});
  auto outs = RunOp(CosSim(), {{"x", x}, {"y", y}});
  const std::vector<float> out = outs.at("out").ToVector<float>();
  EXPECT_NEAR(out[0], std::sqrt(0.5f), 1e-6);
  EXPECT_NEAR(out[1], std::sqrt(0.5f), 1e-6);
  EXPECT_NEAR(out[2], 1.0f, 1e-6);
  EXPECT_EQ(outs.at("yn").dims(), (Dims{1, 1}));
}

TEST(SimilarityOps, EpsKeepsZeroRowsFinite) {
  auto x = Tensor::FromVector<double>({0, 0}, {1, 2});
  auto y = Tensor::FromVector<double>({1, 1}, {1, 2});
  EXPECT_EQ(RunOp(CosSim(1e-8f), {{"x", x}, {"y", y}}).at("out").ToVector<double>(), (std::vector<double>{0}));
}

TEST(SimilarityOps, RowsOfDifferentSizesAreRefused) {
  EXPECT_THROW(RunOp(CosSim(), {{"x", RandomTensor({2, 3})}, {"y", RandomTensor({2, 4})}}), InvalidArgument);
  EXPECT_THROW(RunOp(CosSim(), {{"x", RandomTensor({3, 2})}, {"y", RandomTensor({2, 2})}}), InvalidArgument);
}

}  // namespace flotilla::testing
