#include <gtest/gtest.h>

#include <cstdlib>

#include "flotilla/common/error.h"
#include "flotilla/framework/program.h"
#include "framework/ops/kernel_test_util.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {
namespace {

OpDesc Dropout(float p, const std::string& impl, bool fix_seed = true) {
  return OpDesc("dropout")
      .In("X", {"x"})
      .Out("Out", {"out"})
      .Out("Mask", {"mask"})
      .Set("dropout_prob", p)
      .Set("dropout_implementation", impl)
      .Set("fix_seed", fix_seed)
      .Set("seed", int32_t{7});
}

}  // namespace

void AddDropoutGradChecks(GradCheckRegistry& registry) {
  // A fixed seed gives the same mask on every run, so differences are exact.
  registry.Add({.label = "dropout/upscale_in_train",
                .op = Dropout(0.4f, "upscale_in_train"),
                .inputs = {{"x", RandomTensor({4, 5})}},
                .check = {"x"},
                .outputs = {"out"}});
  registry.Add({.label = "dropout/downgrade_in_infer",
                .op = Dropout(0.3f, "downgrade_in_infer"),
                .inputs = {{"x", RandomTensor({3, 4})}},
                .check = {"x"},
                .outputs = {"out"}});
}

TEST(DropoutOps, TrainingDropsAboutPAndUpscales) {
  Tensor x = RandomTensor({100, 100}, 1, 2, 1);
  auto out = RunOp(Dropout(0.3f, "upscale_in_train"), {{"x", x}});
  auto xv = Values(x), ov = Values(out.at("out")), mv = Values(out.at("mask"));
  int kept = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    kept += mv[i] == 1;
    EXPECT_DOUBLE_EQ(ov[i], mv[i] == 1 ? xv[i] * (1 / (1 - double(0.3f))) : 0.0);
  }
  EXPECT_NEAR(kept / 10000.0, 0.7, 0.03);
}

TEST(DropoutOps, IsTestScalesOrPassesThrough) {
  Tensor x = Tensor::FromVector<double>({1, 2}, {2});
  auto test = [&](const char* impl) {  // no Mask in evaluation
    OpDesc op = Dropout(0.25f, impl).Set("is_test", true);
    op.outputs.erase("Mask");
    return RunOp(op, {{"x", x}}).at("out").ToVector<double>();
  };
  EXPECT_EQ(test("downgrade_in_infer"), (std::vector<double>{0.75, 1.5}));
  EXPECT_EQ(test("upscale_in_train"), (std::vector<double>{1, 2}));
}

TEST(DropoutOps, CloneForTestTurnsDropoutOff) {
  RegisterAllOps();
  Program p;
  p.global_block().CreateVar("x").shape = {2, 2};
  p.global_block().AppendOp(Dropout(0.5f, "upscale_in_train"));
  Program test = p.Clone(/*for_test=*/true);
  EXPECT_TRUE(test.global_block().op(0).Attr<bool>("is_test"));
}

TEST(DropoutOps, FixedSeedDiffersBetweenRanks) {
  Tensor x = RandomTensor({64}, 1, 2, 1);
  setenv("PADDLE_TRAINER_ID", "0", 1);
  auto m0 = Values(RunOp(Dropout(0.5f, "upscale_in_train"), {{"x", x}}).at("mask"));
  auto m0_again = Values(RunOp(Dropout(0.5f, "upscale_in_train"), {{"x", x}}).at("mask"));
  setenv("PADDLE_TRAINER_ID", "1", 1);
  auto m1 = Values(RunOp(Dropout(0.5f, "upscale_in_train"), {{"x", x}}).at("mask"));
  unsetenv("PADDLE_TRAINER_ID");
  EXPECT_EQ(m0, m0_again);
  EXPECT_NE(m0, m1);
}

TEST(DropoutOps, ProbabilityOutOfRangeIsAnError) {
  ExpectErrorMentions<InvalidArgument>(
      [] { RunOp(Dropout(1.5f, "upscale_in_train"), {{"x", RandomTensor({2})}}); },
      {"dropout", "dropout_prob"});
}

}  // namespace flotilla::testing
