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

OpDesc Mul(int x_cols = 1, int y_cols = 1) {
  return OpDesc("mul").In("X", {"x"}).In("Y", {"y"}).Out("Out", {"out"})
      .Set("x_num_col_dims", x_cols).Set("y_num_col_dims", y_cols);
}

OpDesc MatMul(bool tx, bool ty, float alpha = 1.0f) {
  return OpDesc("matmul").In("X", {"x"}).In("Y", {"y"}).Out("Out", {"out"})
      .Set("transpose_X", tx).Set("transpose_Y", ty).Set("alpha", alpha);
}

void AddMatMulCase(GradCheckRegistry& registry, const std::string& label, bool tx, bool ty,
                   const Dims& x, const Dims& y) {
  registry.Add({.label = label,
                .op = MatMul(tx, ty, 0.5f),
                .inputs = {{"x", RandomTensor(x, -1, 1, 11)}, {"y", RandomTensor(y, -1, 1, 12)}},
                .check = {"x", "y"}});
}

// Reference batched product: out[b] = alpha * op(x[b]) * op(y[b]); a 2-D
// operand is shared by every batch.
std::vector<double> NaiveMatMul(const Tensor& x, const Tensor& y, bool tx, bool ty,
                                double alpha) {
  auto xs = x.ToVector<double>(), ys = y.ToVector<double>();
  int64_t xr = x.dim(x.rank() - 2), xc = x.dim(x.rank() - 1);
  int64_t yr = y.dim(y.rank() - 2), yc = y.dim(y.rank() - 1);
  int64_t m = tx ? xc : xr, k = tx ? xr : xc, n = ty ? yr : yc;
  int64_t batch = std::max(x.numel() / (xr * xc), y.numel() / (yr * yc));
  int64_t x_step = x.rank() > 2 ? xr * xc : 0, y_step = y.rank() > 2 ? yr * yc : 0;
  std::vector<double> out;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          double a = xs[b * x_step + (tx ? p * xc + i : i * xc + p)];
          double c = ys[b * y_step + (ty ? j * yc + p : p * yc + j)];
          acc += a * c;
        }
        out.push_back(alpha * acc);
      }
    }
  }
  return out;
}

}  // namespace

void AddMathGradChecks(GradCheckRegistry& registry) {
  registry.Add({.label = "mul/2x3*3x4",
                .op = Mul(),
                .inputs = {{"x", RandomTensor({2, 3}, -1, 1, 1)}, {"y", RandomTensor({3, 4}, -1, 1, 2)}},
                .check = {"x", "y"}});
  registry.Add({.label = "mul/x_num_col_dims=2 [2,3,4]*[4,5]",
                .op = Mul(2, 1),
                .inputs = {{"x", RandomTensor({2, 3, 4}, -1, 1, 3)},
                           {"y", RandomTensor({4, 5}, -1, 1, 4)}},
                .check = {"x", "y"}});
  registry.Add({.label = "mul/y_num_col_dims=2 [3,6]*[2,3,2]",
                .op = Mul(1, 2),
                .inputs = {{"x", RandomTensor({3, 6}, -1, 1, 5)},
                           {"y", RandomTensor({2, 3, 2}, -1, 1, 6)}},
                .check = {"x", "y"}});
  AddMatMulCase(registry, "matmul/2-D", false, false, {3, 4}, {4, 2});
  AddMatMulCase(registry, "matmul/transpose_X", true, false, {4, 3}, {4, 2});
  AddMatMulCase(registry, "matmul/transpose_Y", false, true, {3, 4}, {2, 4});
  AddMatMulCase(registry, "matmul/transpose both", true, true, {4, 3}, {2, 4});
  AddMatMulCase(registry, "matmul/batched", false, false, {2, 3, 4}, {2, 4, 2});
  AddMatMulCase(registry, "matmul/batched X, shared Y", false, false, {2, 3, 4}, {4, 2});
  AddMatMulCase(registry, "matmul/batched X^T, shared Y^T", true, true, {2, 4, 3}, {2, 4});
  AddMatMulCase(registry, "matmul/shared X, batched Y^T", false, true, {3, 4}, {2, 2, 4});
  AddMatMulCase(registry, "matmul/4-D transposed", true, false, {2, 2, 4, 3}, {2, 2, 4, 2});
}

TEST(MathOps, MulMatchesHandComputedProduct) {
  auto x = Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2});
  auto y = Tensor::FromVector<float>({5, 6, 7, 8}, {2, 2});
  auto out = RunOp(Mul(), {{"x", x}, {"y", y}}).at("out");
  EXPECT_EQ(out.dims(), (Dims{2, 2}));
  EXPECT_EQ(out.ToVector<float>(), (std::vector<float>{19, 22, 43, 50}));
}

TEST(MathOps, MulFlattensAndKeepsLeadingAndTrailingDims) {
  // X [2,1,3] at x_num_col_dims 2 is [2,3]; Y [3,2,1] at y_num_col_dims 1 is [3,2].
  auto x = Tensor::FromVector<double>({1, 0, 2, 0, 1, 1}, {2, 1, 3});
  auto y = Tensor::FromVector<double>({1, 2, 3, 4, 5, 6}, {3, 2, 1});
  auto out = RunOp(Mul(2, 1), {{"x", x}, {"y", y}}).at("out");
  EXPECT_EQ(out.dims(), (Dims{2, 1, 2, 1}));
  EXPECT_EQ(out.ToVector<double>(), (std::vector<double>{11, 14, 8, 10}));
}

TEST(MathOps, MulRejectsMismatchedInnerSizeNamingOpAndVariables) {
  auto x = RandomTensor({3, 4}, -1, 1, 1, DType::kFloat32);
  auto y = RandomTensor({5, 2}, -1, 1, 2, DType::kFloat32);
  EXPECT_THAT([&] { RunOp(Mul(), {{"x", x}, {"y", y}}); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("mul"), HasSubstr("X ('x') of shape [3, 4]"),
                                                   HasSubstr("X's columns (4) must equal Y's rows (5)"))));
}

TEST(MathOps, MulRejectsBadNumColDims) {
  auto x = RandomTensor({3, 4});
  auto y = RandomTensor({4, 2});
  EXPECT_THAT([&] { RunOp(Mul(2, 1), {{"x", x}, {"y", y}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("x_num_col_dims")));
}

TEST(MathOps, MatMulMatchesNaiveProductForEveryLayout) {
  struct Case {
    bool tx, ty;
    Dims x, y;
  };
  const std::vector<Case> cases = {
      {false, false, {3, 5}, {5, 4}},       {true, false, {5, 3}, {5, 4}},
      {false, true, {3, 5}, {4, 5}},        {true, true, {5, 3}, {4, 5}},
      {false, false, {2, 3, 5}, {2, 5, 4}}, {false, false, {3, 3, 5}, {5, 4}},
      {true, false, {3, 5, 3}, {5, 4}},     {false, true, {3, 5}, {2, 4, 5}},
      {true, true, {2, 2, 5, 3}, {2, 2, 4, 5}}};
  for (const Case& c : cases) {
    auto x = RandomTensor(c.x, -1, 1, 7), y = RandomTensor(c.y, -1, 1, 8);
    auto out = RunOp(MatMul(c.tx, c.ty, 2.0f), {{"x", x}, {"y", y}}).at("out");
    auto expected = NaiveMatMul(x, y, c.tx, c.ty, 2.0);
    ASSERT_EQ(out.numel(), static_cast<int64_t>(expected.size())) << DimsToString(c.x);
    auto got = out.ToVector<double>();
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], expected[i], 1e-12) << DimsToString(c.x) << " x " << DimsToString(c.y);
    }
  }
}

TEST(MathOps, MatMulOutputShapeCarriesBatchDims) {
  auto out = RunOp(MatMul(false, true), {{"x", RandomTensor({2, 3, 5})}, {"y", RandomTensor({4, 5})}})
                 .at("out");
  EXPECT_EQ(out.dims(), (Dims{2, 3, 4}));
}

TEST(MathOps, MatMulRejectsMismatchedShapes) {
  EXPECT_THAT([&] { RunOp(MatMul(false, false), {{"x", RandomTensor({3, 4})}, {"y", RandomTensor({3, 4})}}); },
              ThrowsMessage<InvalidArgument>(AllOf(HasSubstr("matmul"),
                                                   HasSubstr("X's columns (4) must equal Y's rows (3)"))));
  EXPECT_THAT([&] {
    RunOp(MatMul(false, false), {{"x", RandomTensor({2, 3, 4})}, {"y", RandomTensor({3, 4, 2})}});
  }, ThrowsMessage<InvalidArgument>(HasSubstr("batch dims")));
  EXPECT_THAT([&] { RunOp(MatMul(false, false), {{"x", RandomTensor({4})}, {"y", RandomTensor({4, 2})}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("at least 2-D")));
}

TEST(MathOps, CompileTimeShapesKeepUnknownBatch) {
  EXPECT_EQ(InferredDims(Mul(), {{"x", {-1, 32}}, {"y", {32, 64}}}, "out"), (Dims{-1, 64}));
  EXPECT_EQ(InferredDims(Mul(2, 1), {{"x", {-1, 4, 32}}, {"y", {32, 8}}}, "out"), (Dims{-1, 4, 8}));
  EXPECT_EQ(InferredDims(MatMul(false, true), {{"x", {-1, 3, 5}}, {"y", {4, 5}}}, "out"),
            (Dims{-1, 3, 4}));
  EXPECT_THAT([&] { InferredDims(Mul(), {{"x", {-1, 32}}, {"y", {31, 64}}}, "out"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("X's columns (32) must equal Y's rows (31)")));
}

}  // namespace flotilla::testing
