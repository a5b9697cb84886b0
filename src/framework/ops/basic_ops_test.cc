#include <gtest/gtest.h>

#include "flotilla/common/error.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {

void AddBasicGradChecks(GradCheckRegistry& registry) {
  registry.Add({.label = "sum/3 inputs",
                .op = OpDesc("sum").In("X", {"a", "b", "c"}).Out("Out", {"out"}),
                .inputs = {{"a", RandomTensor({2, 3}, -1, 1, 1)},
                           {"b", RandomTensor({2, 3}, -1, 1, 2)},
                           {"c", RandomTensor({2, 3}, -1, 1, 3)}},
                .check = {"a", "c"}});
  registry.Add({.label = "assign/2x2",
                .op = OpDesc("assign").In("X", {"x"}).Out("Out", {"out"}),
                .inputs = {{"x", RandomTensor({2, 2})}},
                .check = {"x"}});
}

TEST(BasicOps, FillConstantFillsShapeAndType) {
  auto outs = RunOp(OpDesc("fill_constant")
                        .Out("Out", {"out"})
                        .Set("shape", std::vector<int64_t>{2, 3})
                        .Set("value", 2.5)
                        .Set("dtype", static_cast<int32_t>(DType::kFloat64)),
                    {});
  const Tensor& out = outs.at("out");
  EXPECT_EQ(out.dims(), (Dims{2, 3}));
  EXPECT_EQ(out.ToVector<double>(), std::vector<double>(6, 2.5));
}

TEST(BasicOps, FillConstantBatchSizeLikeTakesTheBatchFromInput) {
  auto op = [](std::vector<int64_t> shape, int32_t input_dim_idx, int32_t output_dim_idx) {
    return OpDesc("fill_constant_batch_size_like")
        .In("Input", {"x"})
        .Out("Out", {"out"})
        .Set("shape", shape)
        .Set("value", 0.5)
        .Set("dtype", static_cast<int32_t>(DType::kFloat32))
        .Set("input_dim_idx", input_dim_idx)
        .Set("output_dim_idx", output_dim_idx);
  };
  const Tensor rows = RunOp(op({-1, 1}, 0, 0), {{"x", RandomTensor({3, 4})}}).at("out");
  EXPECT_EQ(rows.dims(), (Dims{3, 1}));
  EXPECT_EQ(rows.dtype(), DType::kFloat32);
  EXPECT_EQ(rows.ToVector<float>(), std::vector<float>(3, 0.5f));
  const Tensor cols = RunOp(op({2, -1}, 1, 1), {{"x", RandomTensor({3, 4})}}).at("out");
  EXPECT_EQ(cols.dims(), (Dims{2, 4}));
  EXPECT_THROW(RunOp(op({-1, 1}, 2, 0), {{"x", RandomTensor({3, 4})}}), InvalidArgument);
}

TEST(BasicOps, SumAddsDenseInputs) {
  auto a = Tensor::FromVector<float>({1, 2}, {2});
  auto b = Tensor::FromVector<float>({10, 20}, {2});
  auto outs = RunOp(OpDesc("sum").In("X", {"a", "b"}).Out("Out", {"out"}), {{"a", a}, {"b", b}});
  EXPECT_EQ(outs.at("out").ToVector<float>(), (std::vector<float>{11, 22}));
}

}  // namespace flotilla::testing
