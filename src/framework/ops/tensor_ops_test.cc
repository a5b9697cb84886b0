#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flotilla/common/error.h"
#include "flotilla/framework/op_registry.h"
#include "framework/ops/shape_test_util.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

OpDesc Concat(std::vector<std::string> xs, int axis) {
  return OpDesc("concat").In("X", std::move(xs)).Out("Out", {"out"}).Set("axis", axis);
}

OpDesc Reshape(std::vector<int32_t> shape, const std::string& type = "reshape") {
  return OpDesc(type).In("X", {"x"}).Out("Out", {"out"}).Set("shape", std::move(shape));
}

OpDesc Cast(DType from, DType to) {
  return OpDesc("cast").In("X", {"x"}).Out("Out", {"out"})
      .Set("in_dtype", static_cast<int32_t>(from)).Set("out_dtype", static_cast<int32_t>(to));
}

OpDesc Random(const std::string& type, std::vector<int64_t> shape, int32_t seed,
              DType dtype = DType::kFloat32) {
  return OpDesc(type).Out("Out", {"out"}).Set("shape", std::move(shape)).Set("seed", seed)
      .Set("dtype", static_cast<int32_t>(dtype));
}

struct Moments {
  double mean = 0, stddev = 0, min = 1e300, max = -1e300;
};

Moments MomentsOf(const Tensor& t) {
  std::vector<double> v;
  if (t.dtype() == DType::kFloat32) {
    for (float f : t.ToVector<float>()) v.push_back(f);
  } else {
    v = t.ToVector<double>();
  }
  Moments m;
  for (double x : v) {
    m.mean += x / v.size();
    m.min = std::min(m.min, x);
    m.max = std::max(m.max, x);
  }
  for (double x : v) m.stddev += (x - m.mean) * (x - m.mean) / v.size();
  m.stddev = std::sqrt(m.stddev);
  return m;
}

}  // namespace

void AddTensorGradChecks(GradCheckRegistry& registry) {
  registry.Add({.label = "concat/axis 1, three inputs",
                .op = Concat({"a", "b", "c"}, 1),
                .inputs = {{"a", RandomTensor({2, 1, 3}, -1, 1, 1)},
                           {"b", RandomTensor({2, 2, 3}, -1, 1, 2)},
                           {"c", RandomTensor({2, 3, 3}, -1, 1, 3)}},
                .check = {"a", "b", "c"}});
  registry.Add({.label = "concat/axis -1, one input unchecked",
                .op = Concat({"a", "b"}, -1),
                .inputs = {{"a", RandomTensor({3, 2}, -1, 1, 4)}, {"b", RandomTensor({3, 4}, -1, 1, 5)}},
                .check = {"b"}});
  registry.Add({.label = "reshape/0 and -1",
                .op = Reshape({0, -1}),
                .inputs = {{"x", RandomTensor({2, 3, 4})}},
                .check = {"x"}});
  registry.Add({.label = "reshape2/flatten",
                .op = Reshape({-1}, "reshape2"),
                .inputs = {{"x", RandomTensor({3, 2})}},
                .check = {"x"}});
  registry.Add({.label = "cast/float64 to float64",
                .op = Cast(DType::kFloat64, DType::kFloat64),
                .inputs = {{"x", RandomTensor({2, 3})}},
                .check = {"x"}});
  // Cast is linear, so a wide step keeps float32 rounding out of the quotient.
  registry.Add({.label = "cast/float64 to float32",
                .op = Cast(DType::kFloat64, DType::kFloat32),
                .inputs = {{"x", RandomTensor({2, 3})}},
                .check = {"x"},
                .delta = 1e-2,
                .atol = 1e-4});
}

TEST(TensorOps, ConcatJoinsAlongAxis) {
  auto a = Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2});
  auto b = Tensor::FromVector<float>({5, 6}, {2, 1});
  auto out = RunOp(Concat({"a", "b"}, 1), {{"a", a}, {"b", b}}).at("out");
  EXPECT_EQ(out.dims(), (Dims{2, 3}));
  EXPECT_EQ(out.ToVector<float>(), (std::vector<float>{1, 2, 5, 3, 4, 6}));
  auto rows = RunOp(Concat({"a", "a"}, 0), {{"a", a}}).at("out");
  EXPECT_EQ(rows.ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4}));
}

TEST(TensorOps, ConcatOfIntegers) {
  auto a = Tensor::FromVector<int64_t>({1, 2}, {2});
  auto b = Tensor::FromVector<int64_t>({3}, {1});
  EXPECT_EQ(RunOp(Concat({"a", "b"}, 0), {{"a", a}, {"b", b}}).at("out").ToVector<int64_t>(),
            (std::vector<int64_t>{1, 2, 3}));
}

TEST(TensorOps, ConcatRejectsMismatchedShapesAndAxis) {
  auto a = RandomTensor({2, 3}), b = RandomTensor({3, 3});
  EXPECT_THAT([&] { RunOp(Concat({"a", "b"}, 1), {{"a", a}, {"b", b}}); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("concat"), HasSubstr("X[1]"),
                                                   HasSubstr("[3, 3]"))));
  EXPECT_THAT([&] { RunOp(Concat({"a", "a"}, 2), {{"a", a}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("attribute axis (2)")));
}

TEST(TensorOps, ReshapeCopiesZeroDimsAndInfersMinusOne) {
  auto x = RandomTensor({2, 3, 4});
  auto out = RunOp(Reshape({0, -1, 2}), {{"x", x}}).at("out");
  EXPECT_EQ(out.dims(), (Dims{2, 6, 2}));
  EXPECT_EQ(out.ToVector<double>(), x.ToVector<double>());
  EXPECT_FALSE(out.SharesBufferWith(x));
  EXPECT_EQ(RunOp(Reshape({4, 0, 2}, "reshape2"), {{"x", x}}).at("out").dims(), (Dims{4, 3, 2}));
}

TEST(TensorOps, ReshapeRejectsBadShapes) {
  auto x = RandomTensor({2, 3});
  EXPECT_THAT([&] { RunOp(Reshape({-1, -1}), {{"x", x}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("more than one -1")));
  EXPECT_THAT([&] { RunOp(Reshape({4, -1}), {{"x", x}}); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("reshape"), HasSubstr("[2, 3]"))));
  EXPECT_THAT([&] { RunOp(Reshape({5}), {{"x", x}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("6 elements")));
  EXPECT_THAT([&] { RunOp(Reshape({-2, 3}), {{"x", x}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("shape[0] is -2")));
}

TEST(TensorOps, CastConvertsBetweenTypes) {
  auto x = Tensor::FromVector<float>({1.7f, -2.5f, 3.0f}, {3});
  auto ints = RunOp(Cast(DType::kFloat32, DType::kInt32), {{"x", x}}).at("out");
  EXPECT_EQ(ints.dtype(), DType::kInt32);
  EXPECT_EQ(ints.ToVector<int32_t>(), (std::vector<int32_t>{1, -2, 3}));
  auto y = Tensor::FromVector<int64_t>({5, -6}, {2, 1});
  auto doubles = RunOp(Cast(DType::kInt64, DType::kFloat64), {{"x", y}}).at("out");
  EXPECT_EQ(doubles.dims(), (Dims{2, 1}));
  EXPECT_EQ(doubles.ToVector<double>(), (std::vector<double>{5, -6}));
}

TEST(TensorOps, CastGradientOnlyBetweenFloatTypes) {
  const OpInfo& info = OpRegistry::Global().Get("cast");
  auto back = info.grad_maker(Cast(DType::kFloat32, DType::kFloat64));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].Attr<int32_t>("out_dtype"), static_cast<int32_t>(DType::kFloat32));
  EXPECT_TRUE(info.grad_maker(Cast(DType::kInt64, DType::kFloat32)).empty());
}

TEST(TensorOps, CastRejectsUnknownDTypeCode) {
  auto x = RandomTensor({2});
  OpDesc op = Cast(DType::kFloat64, DType::kFloat32).Set("out_dtype", 4);
  EXPECT_THAT([&] { RunOp(op, {{"x", x}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("attribute out_dtype (4)")));
}

TEST(TensorOps, UniformRandomStaysInRangeWithUniformMoments) {
  OpDesc op = Random("uniform_random", {100, 100}, 0).Set("min", -2.0f).Set("max", 3.0f);
  auto out = RunOp(op, {}).at("out");
  EXPECT_EQ(out.dims(), (Dims{100, 100}));
  Moments m = MomentsOf(out);
  EXPECT_GE(m.min, -2.0);
  EXPECT_LT(m.max, 3.0);
  EXPECT_NEAR(m.mean, 0.5, 0.08);                    // sd of the mean is 0.014
  EXPECT_NEAR(m.stddev, 5.0 / std::sqrt(12.0), 0.05);
}

TEST(TensorOps, GaussianRandomHasRequestedMoments) {
  OpDesc op = Random("gaussian_random", {20000}, 3, DType::kFloat64).Set("mean", 1.0f)
                  .Set("std", 2.0f);
  Moments m = MomentsOf(RunOp(op, {}).at("out"));
  EXPECT_NEAR(m.mean, 1.0, 0.1);  // sd of the mean is 0.014
  EXPECT_NEAR(m.stddev, 2.0, 0.1);
}

TEST(TensorOps, FixedSeedIsDeterministicAndSeedZeroIsNot) {
  for (const char* type : {"uniform_random", "gaussian_random"}) {
    auto a = RunOp(Random(type, {64}, 42), {}).at("out").ToVector<float>();
    auto b = RunOp(Random(type, {64}, 42), {}).at("out").ToVector<float>();
    auto c = RunOp(Random(type, {64}, 43), {}).at("out").ToVector<float>();
    EXPECT_EQ(a, b) << type;
    EXPECT_NE(a, c) << type;
    // One seed, another variable: a different stream.
    OpDesc other = Random(type, {64}, 42);
    other.outputs["Out"] = {"other"};
    EXPECT_NE(a, RunOp(other, {}).at("other").ToVector<float>()) << type;
    auto d = RunOp(Random(type, {64}, 0), {}).at("out").ToVector<float>();
    auto e = RunOp(Random(type, {64}, 0), {}).at("out").ToVector<float>();
    EXPECT_NE(d, e) << type;
  }
}

TEST(TensorOps, RandomOpsRejectBadAttributes) {
  EXPECT_THAT([&] { RunOp(Random("uniform_random", {4}, 1).Set("min", 2.0f).Set("max", 1.0f), {}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("attribute min")));
  EXPECT_THAT([&] { RunOp(Random("gaussian_random", {4}, 1).Set("std", -1.0f), {}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("attribute std")));
  EXPECT_THAT([&] { RunOp(Random("uniform_random", {4}, 1, DType::kInt32), {}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("int32")));
}

TEST(TensorOps, CompileTimeShapesKeepUnknownBatch) {
  EXPECT_EQ(InferredDims(Concat({"a", "b"}, 1), {{"a", {-1, 2}}, {"b", {-1, 3}}}, "out"),
            (Dims{-1, 5}));
  EXPECT_EQ(InferredDims(Concat({"a", "b"}, 0), {{"a", {-1, 2}}, {"b", {4, 2}}}, "out"),
            (Dims{-1, 2}));
  EXPECT_EQ(InferredDims(Reshape({0, 2, 4}), {{"x", {-1, 8}}}, "out"), (Dims{-1, 2, 4}));
  EXPECT_EQ(InferredDims(Reshape({-1, 4}), {{"x", {-1, 8}}}, "out"), (Dims{-1, 4}));
  EXPECT_EQ(InferredDims(Reshape({-1, 4}), {{"x", {2, 8}}}, "out"), (Dims{4, 4}));
  EXPECT_THAT([&] { InferredDims(Concat({"a", "b"}, 0), {{"a", {-1, 2}}, {"b", {3, 3}}}, "out"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("only dim 0 may differ")));
}

}  // namespace flotilla::testing
