#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flotilla/common/error.h"
#include "framework/ops/shape_test_util.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

OpDesc Reduce(const std::string& type, std::vector<int32_t> dim, bool keep_dim = false,
              bool reduce_all = false) {
  return OpDesc(type).In("X", {"x"}).Out("Out", {"out"}).Set("dim", std::move(dim))
      .Set("keep_dim", keep_dim).Set("reduce_all", reduce_all);
}

// 0, 1, 2, ... shaped `dims`.
Tensor Iota(const Dims& dims) {
  std::vector<double> v(Numel(dims));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return Tensor::FromVector<double>(v, dims);
}

}  // namespace

void AddReduceGradChecks(GradCheckRegistry& registry) {
  registry.Add({.label = "mean/3x4",
                .op = OpDesc("mean").In("X", {"x"}).Out("Out", {"out"}),
                .inputs = {{"x", RandomTensor({3, 4})}},
                .check = {"x"}});
  struct Case {
    const char* label;
    std::vector<int32_t> dim;
    bool keep_dim, reduce_all;
  };
  const std::vector<Case> cases = {{"dim 0", {0}, false, false},
                                   {"dim -1 keep_dim", {-1}, true, false},
                                   {"dims 0,2 (strided)", {0, 2}, false, false},
                                   {"dim 1", {1}, false, false},
                                   {"reduce_all", {0}, false, true}};
  for (const char* type : {"reduce_sum", "reduce_mean"}) {
    for (const Case& c : cases) {
      registry.Add({.label = std::string(type) + "/" + c.label,
                    .op = Reduce(type, c.dim, c.keep_dim, c.reduce_all),
                    .inputs = {{"x", RandomTensor({2, 3, 4}, -1, 1, 9)}},
                    .check = {"x"}});
    }
  }
}

TEST(ReduceOps, MeanIsOneElement) {
  auto out = RunOp(OpDesc("mean").In("X", {"x"}).Out("Out", {"out"}), {{"x", Iota({2, 3})}}).at("out");
  EXPECT_EQ(out.dims(), (Dims{1}));
  EXPECT_DOUBLE_EQ(out.ToVector<double>()[0], 2.5);
}

TEST(ReduceOps, ReduceSumAlongEachAxis) {
  auto x = Tensor::FromVector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto rows = RunOp(Reduce("reduce_sum", {0}), {{"x", x}}).at("out");
  EXPECT_EQ(rows.dims(), (Dims{3}));
  EXPECT_EQ(rows.ToVector<double>(), (std::vector<double>{5, 7, 9}));
  auto cols = RunOp(Reduce("reduce_sum", {-1}, true), {{"x", x}}).at("out");
  EXPECT_EQ(cols.dims(), (Dims{2, 1}));
  EXPECT_EQ(cols.ToVector<double>(), (std::vector<double>{6, 15}));
  auto all = RunOp(Reduce("reduce_sum", {0}, false, true), {{"x", x}}).at("out");
  EXPECT_EQ(all.dims(), (Dims{1}));
  EXPECT_EQ(all.ToVector<double>(), (std::vector<double>{21}));
  auto both = RunOp(Reduce("reduce_sum", {0, 1}, true), {{"x", x}}).at("out");
  EXPECT_EQ(both.dims(), (Dims{1, 1}));
  auto empty_dim = RunOp(Reduce("reduce_sum", {}), {{"x", x}}).at("out");
  EXPECT_EQ(empty_dim.ToVector<double>(), (std::vector<double>{21}));
}

TEST(ReduceOps, ReduceMeanOverNonAdjacentAxes) {
  // x[i][j][k] = 12i + 4j + k; the mean over i and k is 6 + 4j + 1.5.
  auto out = RunOp(Reduce("reduce_mean", {0, 2}), {{"x", Iota({2, 3, 4})}}).at("out");
  EXPECT_EQ(out.dims(), (Dims{3}));
  EXPECT_EQ(out.ToVector<double>(), (std::vector<double>{7.5, 11.5, 15.5}));
}

TEST(ReduceOps, SizeOneAxesAreHandled) {
  auto out = RunOp(Reduce("reduce_sum", {1, 3}), {{"x", Iota({2, 1, 3, 2})}}).at("out");
  EXPECT_EQ(out.dims(), (Dims{2, 3}));
  EXPECT_EQ(out.ToVector<double>(), (std::vector<double>{1, 5, 9, 13, 17, 21}));
}

TEST(ReduceOps, ReduceSumOfIntegers) {
  auto x = Tensor::FromVector<int64_t>({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(RunOp(Reduce("reduce_sum", {1}), {{"x", x}}).at("out").ToVector<int64_t>(),
            (std::vector<int64_t>{3, 7}));
}

TEST(ReduceOps, RejectsDimOutOfRange) {
  EXPECT_THAT([&] { RunOp(Reduce("reduce_sum", {2}), {{"x", RandomTensor({2, 3})}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("attribute dim (2)")));
  EXPECT_THAT([&] { RunOp(Reduce("reduce_mean", {-3}), {{"x", RandomTensor({2, 3})}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("reduce_mean")));
}

TEST(ReduceOps, CompileTimeShapesKeepUnknownBatch) {
  EXPECT_EQ(InferredDims(Reduce("reduce_sum", {0}), {{"x", {-1, 3}}}, "out"), (Dims{3}));
  EXPECT_EQ(InferredDims(Reduce("reduce_mean", {-1}, true), {{"x", {-1, 3}}}, "out"), (Dims{-1, 1}));
  EXPECT_EQ(InferredDims(OpDesc("mean").In("X", {"x"}).Out("Out", {"out"}), {{"x", {-1, 3}}}, "out"),
            (Dims{1}));
}

}  // namespace flotilla::testing
