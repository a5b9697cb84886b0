#include <gtest/gtest.h>

#include "flotilla/common/enforce.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla {
namespace {

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterAllOps();
    VarDesc& x = program.global_block().CreateVar("x");
    x.shape = {-1, 3};
    x.is_data = true;
    x.stop_gradient = true;
    program.global_block().AppendOp(OpDesc("sum").In("X", {"x", "x"}).Out("Out", {"y"}));
  }
  Program program;
  Executor exe;
  Scope scope;
};

TEST_F(ExecutorTest, RunsFeedsAndFetches) {
  auto x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto out = exe.Run(program, {{"x", x}}, {"y"}, &scope);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].ToVector<float>(), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  // The fetched tensor is a copy: a second run does not change it.
  exe.Run(program, {{"x", Tensor::FromVector<float>({0, 0, 0}, {1, 3})}}, {"y"}, &scope);
  EXPECT_EQ(out[0].data<float>()[0], 2.0f);
}

TEST_F(ExecutorTest, BadFeedsAndFetchesAreNamed) {
  auto wrong_shape = Tensor::FromVector<float>({1, 2}, {1, 2});
  try {
    exe.Run(program, {{"x", wrong_shape}}, {"y"}, &scope);
    FAIL();
  } catch (const InvalidArgument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("feed 'x' has shape [1, 2]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[-1, 3]"), std::string::npos) << msg;
  }
  auto wrong_type = Tensor::FromVector<int64_t>({1, 2, 3}, {1, 3});
  EXPECT_THROW(exe.Run(program, {{"x", wrong_type}}, {"y"}, &scope), InvalidArgument);
  try {
    exe.Run(program, {}, {"y"}, &scope);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'x' is read by the program but was not fed"),
              std::string::npos);
  }
  auto x = Tensor::FromVector<float>({1, 2, 3}, {1, 3});
  EXPECT_THROW(exe.Run(program, {{"x", x}}, {"nope"}, &scope), NotFound);
  EXPECT_THROW(exe.Run(program, {{"x", x}, {"z", x}}, {"y"}, &scope), NotFound);
}

TEST_F(ExecutorTest, PersistablesLiveInTheGivenScopeTemporariesInAKid) {
  program.global_block().Var("y").persistable = true;
  program.global_block().AppendOp(OpDesc("assign").In("X", {"y"}).Out("Out", {"tmp"}));
  exe.Run(program, {{"x", Tensor::FromVector<float>({1, 1, 1}, {1, 3})}}, {}, &scope);
  EXPECT_NE(scope.FindLocalVar("y"), nullptr);
  EXPECT_EQ(scope.FindLocalVar("tmp"), nullptr);
}

TEST_F(ExecutorTest, DropLocalScopeFreesTemporariesAndKeepsRunning) {
  program.global_block().AppendOp(OpDesc("assign").In("X", {"y"}).Out("Out", {"tmp"}));
  auto x = Tensor::FromVector<float>({1, 2, 3}, {1, 3});
  exe.DropLocalScope(program, &scope);  // never run: nothing to drop
  exe.Run(program, {{"x", x}}, {"tmp"}, &scope);
  Scope* before = exe.local_scope(program, &scope);
  ASSERT_NE(before->FindVar("tmp"), nullptr);
  ASSERT_TRUE(before->FindVar("tmp")->IsInitialized());
  exe.DropLocalScope(program, &scope);
  Scope* after = exe.local_scope(program, &scope);
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(after->FindLocalVar("tmp"), nullptr);
  auto out = exe.Run(program, {{"x", x}}, {"tmp"}, &scope);
  EXPECT_EQ(out[0].ToVector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_TRUE(exe.local_scope(program, &scope)->FindVar("tmp")->IsInitialized());
}

// acc += x each run: `acc` (persistable, zeros) counts what the runs fed.
class RunSettingsTest : public ExecutorTest {
 protected:
  void SetUp() override {
    ExecutorTest::SetUp();
    VarDesc& acc = program.global_block().CreateVar("acc");
    acc.shape = {1, 3};
    acc.persistable = true;
    program.global_block().AppendOp(OpDesc("sum").In("X", {"acc", "x"}).Out("Out", {"acc"}));
    *scope.Var("acc")->GetMutableTensor() = Tensor::FromVector<float>({0, 0, 0}, {1, 3});
  }
  std::vector<float> Acc() { return scope.FindVar("acc")->GetTensor().ToVector<float>(); }
  static FeedMap Feed(float v) { return {{"x", Tensor::FromVector<float>({v, v, v}, {1, 3})}}; }
};

TEST_F(RunSettingsTest, RunRunsTheProgramIterationsTimesAndFetchesTheLast) {
  program.set_run_settings({.iterations = 3});
  auto out = exe.Run(program, Feed(1), {"acc", "y"}, &scope);
  EXPECT_EQ(Acc(), (std::vector<float>{3, 3, 3}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].ToVector<float>(), (std::vector<float>{3, 3, 3}));  // the last run's
  EXPECT_EQ(out[1].ToVector<float>(), (std::vector<float>{2, 2, 2}));
  program.set_run_settings({});
  exe.Run(program, Feed(1), {}, &scope);
  EXPECT_EQ(Acc(), (std::vector<float>{4, 4, 4}));
}

TEST_F(RunSettingsTest, RunFromFeedsEachIterationFromTheSource) {
  program.set_run_settings({.iterations = 3});
  int calls = 0;
  auto out = exe.RunFrom(program, [&] { return Feed(static_cast<float>(++calls)); }, {"y"}, &scope);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(Acc(), (std::vector<float>{6, 6, 6}));                    // 1 + 2 + 3
  EXPECT_EQ(out.at(0).ToVector<float>(), (std::vector<float>{6, 6, 6}));  // y = 2x of the third
  // What the source throws ends the call after the runs before it.
  calls = 0;
  EXPECT_THROW(exe.RunFrom(program,
                           [&]() -> FeedMap {
                             if (++calls == 2) FLOTILLA_THROW(NotFound, "end of data");
                             return Feed(1);
                           },
                           {}, &scope),
               NotFound);
  EXPECT_EQ(Acc(), (std::vector<float>{7, 7, 7}));
}

TEST_F(RunSettingsTest, DropScopeEveryFreesTemporariesEveryNRuns) {
  program.global_block().AppendOp(OpDesc("assign").In("X", {"y"}).Out("Out", {"tmp"}));
  program.set_run_settings({.drop_scope_every = 2});
  std::vector<bool> kept;
  for (int i = 0; i < 5; ++i) {
    auto out = exe.Run(program, Feed(1), {"tmp"}, &scope);
    EXPECT_EQ(out.at(0).ToVector<float>(), (std::vector<float>{2, 2, 2}));
    kept.push_back(exe.local_scope(program, &scope)->FindLocalVar("tmp") != nullptr);
  }
  EXPECT_EQ(kept, (std::vector<bool>{true, false, true, false, true}));
  EXPECT_EQ(Acc(), (std::vector<float>{5, 5, 5}));  // persistables live on
  // Counted across calls: 3 iterations per call, dropped after runs 6, 8, 10.
  program.set_run_settings({.iterations = 3, .drop_scope_every = 2});
  exe.Run(program, Feed(1), {}, &scope);  // runs 6, 7, 8
  EXPECT_EQ(exe.local_scope(program, &scope)->FindLocalVar("tmp"), nullptr);
  exe.Run(program, Feed(1), {}, &scope);  // runs 9, 10, 11
  EXPECT_NE(exe.local_scope(program, &scope)->FindLocalVar("tmp"), nullptr);
  EXPECT_EQ(Acc(), (std::vector<float>{11, 11, 11}));
}

TEST_F(RunSettingsTest, BadSettingsAndFetchesAreNamedBeforeAnyRun) {
  try {
    program.set_run_settings({.iterations = 0});
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("ExecutionStrategy.num_iteration_per_run=0 must be at least 1"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(program.set_run_settings({.drop_scope_every = -1}), InvalidArgument);
  EXPECT_EQ(program.run_settings().iterations, 1);
  program.set_run_settings({.iterations = 3});
  EXPECT_THROW(exe.Run(program, Feed(1), {"nope"}, &scope), NotFound);
  EXPECT_EQ(Acc(), (std::vector<float>{0, 0, 0}));
  // A moved program keeps its settings.
  Program moved(std::move(program));
  EXPECT_EQ(moved.run_settings().iterations, 3);
}

TEST_F(ExecutorTest, CloseRunsHooksOnce) {
  static int closed = 0;
  Executor::AddCloseHook([] { ++closed; });
  int before = closed;
  exe.Close();
  exe.Close();
  EXPECT_EQ(closed, before + 1);
}

}  // namespace
}  // namespace flotilla
