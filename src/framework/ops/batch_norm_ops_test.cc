#include <gtest/gtest.h>

#include <cmath>

#include "flotilla/common/error.h"
#include "framework/ops/shape_test_util.h"
#include "framework/ops/kernel_test_util.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {
namespace {

OpDesc BatchNorm() {
  return OpDesc("batch_norm")
      .In("X", {"x"})
      .In("Scale", {"scale"})
      .In("Bias", {"bias"})
      .In("Mean", {"mean"})
      .In("Variance", {"var"})
      .Out("Y", {"y"})
      .Out("MeanOut", {"mean_out"})
      .Out("VarianceOut", {"var_out"})
      .Out("SavedMean", {"saved_mean"})
      .Out("SavedVariance", {"saved_var"});
}

std::map<std::string, Tensor> Inputs(const Dims& x, int64_t c) {
  return {{"x", RandomTensor(x, -1, 2, 1)},
          {"scale", RandomTensor({c}, 0.5, 1.5, 2)},
          {"bias", RandomTensor({c}, -1, 1, 3)},
          {"mean", RandomTensor({c}, -0.5, 0.5, 4)},
          {"var", RandomTensor({c}, 0.5, 1.5, 5)}};
}

}  // namespace

void AddBatchNormGradChecks(GradCheckRegistry& registry) {
  registry.Add({.label = "batch_norm/train NCHW",
                .op = BatchNorm(),
                .inputs = Inputs({3, 2, 3, 2}, 2),
                .check = {"x", "scale", "bias"},
                .outputs = {"y"}});
  registry.Add({.label = "batch_norm/train [N, C]",
                .op = BatchNorm(),
                .inputs = Inputs({5, 3}, 3),
                .check = {"x", "scale", "bias"},
                .outputs = {"y"}});
  registry.Add({.label = "batch_norm/global stats",
                .op = BatchNorm().Set("use_global_stats", true),
                .inputs = Inputs({2, 2, 2, 3}, 2),
                .check = {"x", "scale", "bias"},
                .outputs = {"y"}});
  auto inputs = Inputs({3, 2, 2, 2}, 2);
  registry.Add({.label = "batch_norm/fused relu",
                .op = BatchNorm().Set("fuse_with_relu", true),
                .inputs = inputs,
                .check = {"x", "scale", "bias"},
                .outputs = {"y"}});
}

TEST(BatchNormOps, TrainingNormalisesAndUpdatesRunningStats) {
  auto in = Inputs({4, 3, 2, 2}, 3);
  auto out = RunOp(BatchNorm().Set("momentum", 0.8f), in);
  const auto x = Values(in.at("x")), y = Values(out.at("y"));
  const auto scale = Values(in.at("scale")), bias = Values(in.at("bias"));
  const auto mean0 = Values(in.at("mean")), var0 = Values(in.at("var"));
  for (int c = 0; c < 3; ++c) {
    double m = 0, v = 0;
    for (int n = 0; n < 4; ++n)
      for (int k = 0; k < 4; ++k) m += x[(n * 3 + c) * 4 + k] / 16;
    for (int n = 0; n < 4; ++n)
      for (int k = 0; k < 4; ++k) v += std::pow(x[(n * 3 + c) * 4 + k] - m, 2) / 16;
    for (int n = 0; n < 4; ++n)
      for (int k = 0; k < 4; ++k) {
        const int i = (n * 3 + c) * 4 + k;
        EXPECT_NEAR(y[i], (x[i] - m) / std::sqrt(v + 1e-5) * scale[c] + bias[c], 1e-9);
      }
    EXPECT_NEAR(Values(out.at("mean_out"))[c], double(0.8f) * mean0[c] + (1 - double(0.8f)) * m, 1e-9);
    EXPECT_NEAR(Values(out.at("var_out"))[c], double(0.8f) * var0[c] + (1 - double(0.8f)) * v, 1e-9);
    EXPECT_NEAR(Values(out.at("saved_var"))[c], 1 / std::sqrt(v + 1e-5), 1e-9);
  }
}

TEST(BatchNormOps, IsTestUsesRunningStatsAndFusedReluClamps) {
  auto in = Inputs({2, 2, 1, 3}, 2);
  auto out = RunOp(BatchNorm().Set("is_test", true).Set("fuse_with_relu", true), in);
  const auto x = Values(in.at("x")), y = Values(out.at("y"));
  const auto s = Values(in.at("scale")), b = Values(in.at("bias"));
  const auto m = Values(in.at("mean")), v = Values(in.at("var"));
  for (int i = 0; i < 12; ++i) {
    const int c = (i / 3) % 2;
    EXPECT_NEAR(y[i], std::max(0.0, (x[i] - m[c]) / std::sqrt(v[c] + 1e-5) * s[c] + b[c]), 1e-9);
  }
}

TEST(BatchNormOps, ChannelMismatchNamesSlotAndShape) {
  ExpectErrorMentions<InvalidArgument>(
      [] {
        InferredDims(BatchNorm(),
                     {{"x", {-1, 4, 8, 8}}, {"scale", {3}}, {"bias", {4}}, {"mean", {4}}, {"var", {4}}},
                     "y");
      },
      {"batch_norm", "Scale ('scale') of shape [3]", "must have shape [4]"});
}

}  // namespace flotilla::testing
