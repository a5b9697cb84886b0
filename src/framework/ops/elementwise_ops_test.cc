#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flotilla/common/error.h"
#include "framework/ops/shape_test_util.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

OpDesc Elementwise(const std::string& type, int axis = -1) {
  return OpDesc(type).In("X", {"x"}).In("Y", {"y"}).Out("Out", {"out"}).Set("axis", axis);
}

struct Layout {
  const char* name;
  Dims x, y;
  int axis;
};

// Same shape, bias row, a middle run, a scalar, Y with trailing 1s, leading axis.
const std::vector<Layout>& Layouts() {
  static const std::vector<Layout> layouts = {
      {"same shape", {2, 3}, {2, 3}, -1},   {"bias row", {4, 3}, {3}, -1},
      {"middle axis", {2, 3, 4}, {3}, 1},   {"scalar Y", {2, 3}, {1}, -1},
      {"Y trailing 1s", {2, 3, 4}, {3, 1}, 1}, {"leading axis", {3, 2}, {3}, 0},
      {"2-D run", {2, 3, 4}, {3, 4}, 1},
      // NumPy's broadcasting (axis -1, outside the axis rule): both stretch.
      {"numpy [N,1] with [N]", {3, 1}, {3}, -1}, {"numpy [1,4] with [3,1]", {1, 4}, {3, 1}, -1},
      {"numpy [2,1,3] with [4,1]", {2, 1, 3}, {4, 1}, -1}};
  return layouts;
}

std::vector<double> Values(const Tensor& t) { return t.ToVector<double>(); }

}  // namespace

void AddElementwiseGradChecks(GradCheckRegistry& registry) {
  for (const char* type : {"elementwise_add", "elementwise_sub", "elementwise_mul",
                           "elementwise_div", "elementwise_max", "elementwise_min"}) {
    unsigned seed = 1;
    for (const Layout& l : Layouts()) {
      // Divisors stay away from 0 so finite differences are well behaved.
      registry.Add({.label = std::string(type) + "/" + l.name,
                    .op = Elementwise(type, l.axis),
                    .inputs = {{"x", RandomTensor(l.x, -1, 1, seed)},
                               {"y", RandomTensor(l.y, 0.5, 1.5, seed + 100)}},
                    .check = {"x", "y"}});
      ++seed;
    }
  }
}

TEST(ElementwiseOps, NumpyBroadcastStretchesBothSides) {
  auto x = Tensor::FromVector<double>({1, 2, 3}, {3, 1});
  auto y = Tensor::FromVector<double>({10, 20, 30}, {3});
  auto out = RunOp(Elementwise("elementwise_sub"), {{"x", x}, {"y", y}}).at("out");
  EXPECT_EQ(out.dims(), (Dims{3, 3}));
  EXPECT_EQ(Values(out), (std::vector<double>{-9, -19, -29, -8, -18, -28, -7, -17, -27}));
  EXPECT_EQ(InferredDims(Elementwise("elementwise_add"), {{"x", {-1, 1}}, {"y", {-1}}}, "out"), (Dims{-1, -1}));
  EXPECT_EQ(InferredDims(Elementwise("elementwise_add"), {{"x", {-1, 4}}, {"y", {4}}}, "out"), (Dims{-1, 4}));
  // Another axis than -1 keeps Paddle's axis rule and its error.
  EXPECT_THAT([&] { RunOp(Elementwise("elementwise_add", 1), {{"x", x}, {"y", y}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("cannot broadcast")));
}

TEST(ElementwiseOps, MaxAndMinPickEachElement) {
  auto x = Tensor::FromVector<float>({1, 5, -2, 7}, {2, 2});
  auto y = Tensor::FromVector<float>({3, 4}, {2});
  EXPECT_EQ(RunOp(Elementwise("elementwise_max"), {{"x", x}, {"y", y}}).at("out").ToVector<float>(),
            (std::vector<float>{3, 5, 3, 7}));
  EXPECT_EQ(RunOp(Elementwise("elementwise_min"), {{"x", x}, {"y", y}}).at("out").ToVector<float>(),
            (std::vector<float>{1, 4, -2, 4}));
}

TEST(ElementwiseOps, ComparisonsGiveInt64OnesAndZeros) {
  auto x = Tensor::FromVector<float>({1, 4, 3, 2}, {2, 2});
  auto y = Tensor::FromVector<float>({2, 3}, {2});
  const std::map<std::string, std::vector<int64_t>> want = {
      {"less_than", {1, 0, 0, 1}},  {"less_equal", {1, 0, 0, 1}}, {"greater_than", {0, 1, 1, 0}},
      {"greater_equal", {0, 1, 1, 0}}, {"equal", {0, 0, 0, 0}},    {"not_equal", {1, 1, 1, 1}}};
  for (const auto& [type, values] : want) {
    Tensor out = RunOp(Elementwise(type), {{"x", x}, {"y", y}}).at("out");
    EXPECT_EQ(out.dtype(), DType::kInt64) << type;
    EXPECT_EQ(out.dims(), (Dims{2, 2})) << type;
    EXPECT_EQ(out.ToVector<int64_t>(), values) << type;
  }
  auto tie = RunOp(Elementwise("less_equal"), {{"x", Tensor::FromVector<float>({2, 3}, {2, 1})},
                                               {"y", Tensor::FromVector<float>({2, 3}, {2})}}).at("out");
  EXPECT_EQ(tie.dims(), (Dims{2, 2}));  // NumPy's broadcasting
  EXPECT_EQ(tie.ToVector<int64_t>(), (std::vector<int64_t>{1, 1, 0, 1}));
}

TEST(ElementwiseOps, AddBroadcastsBiasRow) {
  auto x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto y = Tensor::FromVector<float>({10, 20, 30}, {3});
  auto out = RunOp(Elementwise("elementwise_add"), {{"x", x}, {"y", y}}).at("out");
  EXPECT_EQ(out.dims(), (Dims{2, 3}));
  EXPECT_EQ(out.ToVector<float>(), (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(ElementwiseOps, AxisZeroBroadcastsAlongRows) {
  auto x = Tensor::FromVector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto y = Tensor::FromVector<double>({2, 10}, {2});
  auto sub = RunOp(Elementwise("elementwise_sub", 0), {{"x", x}, {"y", y}}).at("out");
  EXPECT_EQ(Values(sub), (std::vector<double>{-1, 0, 1, -6, -5, -4}));
  auto mul = RunOp(Elementwise("elementwise_mul", 0), {{"x", x}, {"y", y}}).at("out");
  EXPECT_EQ(Values(mul), (std::vector<double>{2, 4, 6, 40, 50, 60}));
}

TEST(ElementwiseOps, MiddleAxisBroadcast) {
  // X [2,2,2], Y [2] at axis 1: Y[j] applies to X[:, j, :].
  auto x = Tensor::FromVector<double>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  auto y = Tensor::FromVector<double>({1, 2}, {2});
  auto out = RunOp(Elementwise("elementwise_div", 1), {{"x", x}, {"y", y}}).at("out");
  EXPECT_EQ(Values(out), (std::vector<double>{1, 2, 1.5, 2, 5, 6, 3.5, 4}));
}

TEST(ElementwiseOps, ScalarYBroadcastsEverywhere) {
  auto x = Tensor::FromVector<double>({1, 2, 3, 4}, {2, 2});
  auto y = Tensor::FromVector<double>({3}, {1});
  auto out = RunOp(Elementwise("elementwise_mul"), {{"x", x}, {"y", y}}).at("out");
  EXPECT_EQ(Values(out), (std::vector<double>{3, 6, 9, 12}));
}

TEST(ElementwiseOps, IntegerForward) {
  auto x32 = Tensor::FromVector<int32_t>({7, 8, 9, 10}, {2, 2});
  auto y32 = Tensor::FromVector<int32_t>({2, 3}, {2});
  EXPECT_EQ(RunOp(Elementwise("elementwise_div"), {{"x", x32}, {"y", y32}}).at("out").ToVector<int32_t>(),
            (std::vector<int32_t>{3, 2, 4, 3}));
  auto x64 = Tensor::FromVector<int64_t>({1, 2, 3}, {3});
  auto y64 = Tensor::FromVector<int64_t>({1LL << 40, 5, -7}, {3});
  EXPECT_EQ(RunOp(Elementwise("elementwise_add"), {{"x", x64}, {"y", y64}}).at("out").ToVector<int64_t>(),
            (std::vector<int64_t>{(1LL << 40) + 1, 7, -4}));
  EXPECT_EQ(RunOp(Elementwise("elementwise_sub"), {{"x", x64}, {"y", y64}}).at("out").ToVector<int64_t>(),
            (std::vector<int64_t>{1 - (1LL << 40), -3, 10}));
}

TEST(ElementwiseOps, IntegerDivisionByZeroIsAnError) {
  auto x = Tensor::FromVector<int64_t>({1, 2}, {2});
  auto y = Tensor::FromVector<int64_t>({1, 0}, {2});
  EXPECT_THAT([&] { RunOp(Elementwise("elementwise_div"), {{"x", x}, {"y", y}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("division by zero")));
}

TEST(ElementwiseOps, LongOddSizedInputsMatchScalarLoop) {
  // Lengths that leave vector remainders, in every loop shape.
  for (const Layout& l : std::vector<Layout>{{"same", {1003}, {1003}, -1},
                                             {"bias", {7, 131}, {131}, -1},
                                             {"general", {3, 5, 67}, {5}, 1}}) {
    auto x = RandomTensor(l.x, -1, 1, 3), y = RandomTensor(l.y, 0.5, 1.5, 4);
    auto out = Values(RunOp(Elementwise("elementwise_mul", l.axis), {{"x", x}, {"y", y}}).at("out"));
    auto xs = Values(x), ys = Values(y);
    int64_t post = l.name == std::string("general") ? 67 : 1;
    for (size_t i = 0; i < xs.size(); ++i) {
      double yv = ys[(i / post) % ys.size()];
      ASSERT_DOUBLE_EQ(out[i], xs[i] * yv) << l.name << " element " << i;
    }
  }
}

TEST(ElementwiseOps, RejectsShapesThatDoNotBroadcast) {
  auto x = RandomTensor({2, 3});
  auto y = RandomTensor({4});
  EXPECT_THAT([&] { RunOp(Elementwise("elementwise_add"), {{"x", x}, {"y", y}}); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("elementwise_add"),
                                                   HasSubstr("Y ('y') of shape [4]"),
                                                   HasSubstr("X ('x') of shape [2, 3]"))));
}

TEST(ElementwiseOps, RejectsAxisOutOfRange) {
  EXPECT_THAT([&] {
    RunOp(Elementwise("elementwise_mul", 5), {{"x", RandomTensor({2, 3})}, {"y", RandomTensor({3})}});
  }, ThrowsMessage<InvalidArgument>(HasSubstr("attribute axis (5)")));
}

TEST(ElementwiseOps, RejectsMixedDTypes) {
  auto x = RandomTensor({2}, -1, 1, 1, DType::kFloat32);
  auto y = RandomTensor({2}, -1, 1, 1, DType::kFloat64);
  EXPECT_THAT([&] { RunOp(Elementwise("elementwise_add"), {{"x", x}, {"y", y}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("float32")));
}

TEST(ElementwiseOps, CompileTimeShapesKeepUnknownBatch) {
  auto op = Elementwise("elementwise_add");
  EXPECT_EQ(InferredDims(op, {{"x", {-1, 1280}}, {"y", {1280}}}, "out"), (Dims{-1, 1280}));
  EXPECT_EQ(InferredDims(Elementwise("elementwise_mul", 1), {{"x", {-1, 3, 4}}, {"y", {3}}}, "out"),
            (Dims{-1, 3, 4}));
  EXPECT_EQ(InferredDims(op, {{"x", {-1, 5}}, {"y", {-1, 5}}}, "out"), (Dims{-1, 5}));
  // A mismatch in known dims fails when the program is built.
  EXPECT_THAT([&] { InferredDims(op, {{"x", {-1, 1280}}, {"y", {1000}}}, "out"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("X ('x') of shape [-1, 1280]")));
}

}  // namespace flotilla::testing
