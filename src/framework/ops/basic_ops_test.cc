#include <gtest/gtest.h>

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

TEST(BasicOps, SumAddsDenseInputs) {
  auto a = Tensor::FromVector<float>({1, 2}, {2});
  auto b = Tensor::FromVector<float>({10, 20}, {2});
  auto outs = RunOp(OpDesc("sum").In("X", {"a", "b"}).Out("Out", {"out"}), {{"a", a}, {"b", b}});
  EXPECT_EQ(outs.at("out").ToVector<float>(), (std::vector<float>{11, 22}));
}

}  // namespace flotilla::testing
