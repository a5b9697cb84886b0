#include <gtest/gtest.h>

#include "flotilla/common/error.h"
#include "framework/ops/shape_test_util.h"
#include "framework/ops/kernel_test_util.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {
namespace {

OpDesc Pool(const std::string& type, std::vector<int32_t> k, std::vector<int32_t> s,
            std::vector<int32_t> p) {
  return OpDesc("pool2d")
      .In("X", {"x"})
      .Out("Out", {"out"})
      .Set("pooling_type", type)
      .Set("ksize", k)
      .Set("strides", s)
      .Set("paddings", p);
}

// Distinct values so max pooling has no ties (finite differences need that).
Tensor Distinct(const Dims& dims, unsigned seed) {
  Tensor t = RandomTensor(dims, -1, 1, seed);
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] += 0.01 * double(i % 97);
  return t;
}

}  // namespace

void AddPoolGradChecks(GradCheckRegistry& registry) {
  registry.Add({.label = "pool2d/max 3x3 s2 p1",
                .op = Pool("max", {3, 3}, {2, 2}, {1, 1}),
                .inputs = {{"x", Distinct({2, 2, 5, 5}, 1)}},
                .check = {"x"}});
  registry.Add({.label = "pool2d/avg exclusive",
                .op = Pool("avg", {3, 3}, {2, 2}, {1, 1}),
                .inputs = {{"x", RandomTensor({1, 2, 5, 6}, -1, 1, 2)}},
                .check = {"x"}});
  registry.Add({.label = "pool2d/avg inclusive ceil",
                .op = Pool("avg", {2, 2}, {2, 2}, {0, 0}).Set("exclusive", false).Set("ceil_mode", true),
                .inputs = {{"x", RandomTensor({1, 2, 5, 5}, -1, 1, 3)}},
                .check = {"x"}});
  registry.Add({.label = "pool2d/global avg",
                .op = Pool("avg", {1, 1}, {1, 1}, {0, 0}).Set("global_pooling", true),
                .inputs = {{"x", RandomTensor({2, 3, 3, 4}, -1, 1, 4)}},
                .check = {"x"}});
  registry.Add({.label = "pool2d/adaptive max 2x3",
                .op = Pool("max", {2, 3}, {1, 1}, {0, 0}).Set("adaptive", true),
                .inputs = {{"x", Distinct({1, 2, 5, 7}, 5)}},
                .check = {"x"}});
}

TEST(PoolOps, MaxAndAvgValues) {
  auto x = Tensor::FromVector<double>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {1, 1, 4, 4});
  auto mx = RunOp(Pool("max", {2, 2}, {2, 2}, {0, 0}), {{"x", x}}).at("out");
  EXPECT_EQ(mx.ToVector<double>(), (std::vector<double>{6, 8, 14, 16}));
  auto av = RunOp(Pool("avg", {2, 2}, {2, 2}, {0, 0}), {{"x", x}}).at("out");
  EXPECT_EQ(av.ToVector<double>(), (std::vector<double>{3.5, 5.5, 11.5, 13.5}));
  // padded avg: exclusive divides by the cells inside, inclusive by 4
  auto ex = RunOp(Pool("avg", {2, 2}, {2, 2}, {1, 1}), {{"x", x}}).at("out").ToVector<double>();
  EXPECT_DOUBLE_EQ(ex[0], 1.0);
  auto in = RunOp(Pool("avg", {2, 2}, {2, 2}, {1, 1}).Set("exclusive", false), {{"x", x}}).at("out").ToVector<double>();
  EXPECT_DOUBLE_EQ(in[0], 0.25);
}

TEST(PoolOps, CeilModeAndGlobalAndAdaptiveShapes) {
  EXPECT_EQ(InferredDims(Pool("max", {3, 3}, {2, 2}, {0, 0}).Set("ceil_mode", true), {{"x", {-1, 4, 8, 8}}}, "out"),
            (Dims{-1, 4, 4, 4}));
  EXPECT_EQ(InferredDims(Pool("max", {3, 3}, {2, 2}, {0, 0}), {{"x", {-1, 4, 8, 8}}}, "out"), (Dims{-1, 4, 3, 3}));
  EXPECT_EQ(InferredDims(Pool("avg", {7, 7}, {1, 1}, {0, 0}).Set("global_pooling", true), {{"x", {-1, 64, 5, 9}}}, "out"),
            (Dims{-1, 64, 1, 1}));
  EXPECT_EQ(InferredDims(Pool("avg", {3, 2}, {1, 1}, {0, 0}).Set("adaptive", true), {{"x", {2, 4, 7, 7}}}, "out"),
            (Dims{2, 4, 3, 2}));
}

TEST(PoolOps, AdaptiveBinsOverlapLikePaddle) {
  // 5 -> 3 bins: [0,2), [1,4), [3,5)
  auto x = Tensor::FromVector<double>({1, 2, 3, 4, 5}, {1, 1, 1, 5});
  auto out = RunOp(Pool("avg", {1, 3}, {1, 1}, {0, 0}).Set("adaptive", true), {{"x", x}}).at("out");
  EXPECT_EQ(out.ToVector<double>(), (std::vector<double>{1.5, 3, 4.5}));
}

TEST(PoolOps, ErrorsNameOpAndInput) {
  ExpectErrorMentions<InvalidArgument>(
      [] { InferredDims(Pool("max", {2, 2}, {1, 1}, {0, 0}), {{"x", {4, 8, 8}}}, "out"); },
      {"pool2d", "X ('x') of shape [4, 8, 8]", "[N, C, H, W]"});
  ExpectErrorMentions<InvalidArgument>(
      [] { InferredDims(Pool("sum", {2, 2}, {1, 1}, {0, 0}), {{"x", {1, 1, 4, 4}}}, "out"); },
      {"pool2d", "pooling_type"});
}

}  // namespace flotilla::testing
