#include <gtest/gtest.h>

#include <cmath>

#include "flotilla/common/error.h"
#include "framework/ops/shape_test_util.h"
#include "framework/ops/kernel_test_util.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {
namespace {

OpDesc Norm(const std::string& type) {
  return OpDesc(type)
      .In("X", {"x"})
      .In("Scale", {"scale"})
      .In("Bias", {"bias"})
      .Out("Y", {"y"})
      .Out("Mean", {"mean"})
      .Out("Variance", {"var"});
}

}  // namespace

void AddNormGradChecks(GradCheckRegistry& registry) {
  registry.Add({.label = "layer_norm/axis 1",
                .op = Norm("layer_norm"),
                .inputs = {{"x", RandomTensor({3, 2, 3}, -1, 1, 1)},
                           {"scale", RandomTensor({6}, 0.5, 1.5, 2)},
                           {"bias", RandomTensor({6}, -1, 1, 3)}},
                .check = {"x", "scale", "bias"},
                .outputs = {"y"}});
  registry.Add({.label = "layer_norm/axis 2",
                .op = Norm("layer_norm").Set("begin_norm_axis", int32_t{2}),
                .inputs = {{"x", RandomTensor({2, 3, 4}, -1, 1, 4)},
                           {"scale", RandomTensor({4}, 0.5, 1.5, 5)},
                           {"bias", RandomTensor({4}, -1, 1, 6)}},
                .check = {"x", "scale", "bias"},
                .outputs = {"y"}});
  registry.Add({.label = "group_norm/2 groups",
                .op = Norm("group_norm").Set("groups", int32_t{2}),
                .inputs = {{"x", RandomTensor({2, 4, 2, 3}, -1, 1, 7)},
                           {"scale", RandomTensor({4}, 0.5, 1.5, 8)},
                           {"bias", RandomTensor({4}, -1, 1, 9)}},
                .check = {"x", "scale", "bias"},
                .outputs = {"y"}});
}

TEST(NormOps, GroupNormNormalisesEachGroup) {
  Tensor x = RandomTensor({2, 4, 3, 3}, -1, 3, 1);
  auto out = RunOp(OpDesc("group_norm").In("X", {"x"}).Out("Y", {"y"}).Out("Mean", {"m"}).Out("Variance", {"v"})
                       .Set("groups", int32_t{2}),
                   {{"x", x}});
  auto y = Values(out.at("y"));
  EXPECT_EQ(out.at("m").dims(), (Dims{2, 2}));
  for (int r = 0; r < 4; ++r) {  // each (sample, group) row of 18 values: mean 0, variance ~1
    double m = 0, v = 0;
    for (int j = 0; j < 18; ++j) m += y[r * 18 + j] / 18;
    for (int j = 0; j < 18; ++j) v += (y[r * 18 + j] - m) * (y[r * 18 + j] - m) / 18;
    EXPECT_NEAR(m, 0, 1e-9);
    EXPECT_NEAR(v, 1, 1e-3);
  }
}

TEST(NormOps, GroupsMustDivideChannels) {
  ExpectErrorMentions<InvalidArgument>(
      [] {
        InferredDims(OpDesc("group_norm").In("X", {"x"}).Out("Y", {"y"}).Out("Mean", {"m"})
                         .Out("Variance", {"v"}).Set("groups", int32_t{3}),
                     {{"x", {-1, 4, 8, 8}}}, "y");
      },
      {"group_norm", "groups (3)", "X ('x') of shape [-1, 4, 8, 8]"});
}

}  // namespace flotilla::testing
