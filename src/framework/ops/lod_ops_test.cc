#include <gtest/gtest.h>

#include "framework/ops/kernel_test_util.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {

void AddLoDGradChecks(GradCheckRegistry& registry) {
  Tensor x = RandomTensor({6, 2}, -1, 1, 81);
  x.set_lod({{0, 6}});
  registry.Add({.label = "lod_reset/target_lod",
                .op = OpDesc("lod_reset").In("X", {"x"}).Out("Out", {"out"}).Set("target_lod", std::vector<int32_t>{0, 2, 2, 6}),
                .inputs = {{"x", x}},
                .check = {"x"}});
}

namespace {

OpDesc ResetOp() { return OpDesc("lod_reset").In("X", {"x"}).Out("Out", {"out"}); }

TEST(LoDOps, ResetFromAttributeYOffsetsOrYValuesAndAppend) {
  auto x = Tensor::FromVector<float>({1, 2, 3, 4}, {4, 1});
  x.set_lod({{0, 1, 4}});
  auto by_attr = RunOp(OpDesc(ResetOp()).Set("target_lod", std::vector<int32_t>{0, 2, 4}), {{"x", x}}).at("out");
  EXPECT_EQ(by_attr.lod(), (LoD{{0, 2, 4}}));
  EXPECT_EQ(by_attr.ToVector<float>(), x.ToVector<float>());
  auto y = Tensor::FromVector<float>({0, 0, 0, 0}, {4, 1});
  y.set_lod({{0, 3, 4}});
  EXPECT_EQ(RunOp(OpDesc(ResetOp()).In("Y", {"y"}), {{"x", x}, {"y", y}}).at("out").lod(), (LoD{{0, 3, 4}}));
  auto values = Tensor::FromVector<int32_t>({0, 0, 4}, {3});
  EXPECT_EQ(RunOp(OpDesc(ResetOp()).In("Y", {"y"}), {{"x", x}, {"y", values}}).at("out").lod(), (LoD{{0, 0, 4}}));
  // lod_append: a level below X's two sequences, whose last level now indexes rows.
  auto appended = RunOp(OpDesc(ResetOp()).Set("target_lod", std::vector<int32_t>{0, 1, 2, 4}).Set("append", true),
                        {{"x", Tensor::FromVector<float>({1, 2, 3, 4}, {4, 1})}})
                      .at("out");
  EXPECT_EQ(appended.lod(), (LoD{{0, 1, 2, 4}}));
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunOp(OpDesc(ResetOp()).Set("target_lod", std::vector<int32_t>{0, 5}), {{"x", x}}); },
      {"lod_reset", "invalid LoD", "4 rows"});
}

}  // namespace
}  // namespace flotilla::testing
