#include <gtest/gtest.h>

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
