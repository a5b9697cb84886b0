#include <gtest/gtest.h>

#include "flotilla/common/error.h"
#include "framework/ops/kernel_test_util.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {

void AddLabelGradChecks(GradCheckRegistry& registry) {
  registry.Add({.label = "label_smooth/uniform",
                .op = OpDesc("label_smooth").In("X", {"x"}).Out("Out", {"out"}).Set("epsilon", 0.2f),
                .inputs = {{"x", RandomTensor({3, 4}, 0, 1)}},
                .check = {"x"}});
  registry.Add({.label = "label_smooth/prior",
                .op = OpDesc("label_smooth").In("X", {"x"}).In("PriorDist", {"p"}).Out("Out", {"out"}),
                .inputs = {{"x", RandomTensor({2, 3}, 0, 1)}, {"p", RandomTensor({1, 3}, 0, 1, 2)}},
                .check = {"x"}});
}

TEST(LabelOps, OneHotThenSmooth) {
  auto ids = Tensor::FromVector<int64_t>({2, 0}, {2, 1});
  auto hot = RunOp(OpDesc("one_hot").In("X", {"x"}).Out("Out", {"out"}).Set("depth", int32_t{4}), {{"x", ids}})
                 .at("out");
  EXPECT_EQ(hot.dims(), (Dims{2, 4}));
  EXPECT_EQ(hot.ToVector<float>(), (std::vector<float>{0, 0, 1, 0, 1, 0, 0, 0}));
  auto smooth = RunOp(OpDesc("label_smooth").In("X", {"x"}).Out("Out", {"out"}).Set("epsilon", 0.4f),
                      {{"x", hot}}).at("out").ToVector<float>();
  EXPECT_NEAR(smooth[2], 0.7f, 1e-6);
  EXPECT_NEAR(smooth[0], 0.1f, 1e-6);
}

TEST(LabelOps, OneHotRejectsOutOfRangeIds) {
  ExpectErrorMentions<InvalidArgument>(
      [] {
        RunOp(OpDesc("one_hot").In("X", {"x"}).Out("Out", {"out"}).Set("depth", int32_t{3}),
              {{"x", Tensor::FromVector<int64_t>({1, 3}, {2, 1})}});
      },
      {"one_hot", "X[1] = 3", "[0, 3)"});
}

}  // namespace flotilla::testing
