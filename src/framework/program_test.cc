#include <gtest/gtest.h>

#include "flotilla/framework/op_registry.h"
#include "flotilla/framework/program.h"
#include "framework/framework.pb.h"

namespace flotilla {
namespace {

class ProgramTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterAllOps(); }
};

OpDesc Fill(const std::string& out, double value) {
  return OpDesc("fill_constant")
      .Out("Out", {out})
      .Set("shape", std::vector<int64_t>{2, 3})
      .Set("value", value);
}

TEST_F(ProgramTest, AppendOpInfersShapesAndFillsDefaults) {
  Program p;
  OpDesc& op = p.global_block().AppendOp(Fill("a", 1));
  EXPECT_EQ(p.global_block().Var("a").shape, (Dims{2, 3}));
  EXPECT_EQ(op.Attr<int32_t>("dtype"), static_cast<int32_t>(DType::kFloat32));
  EXPECT_THROW(p.global_block().AppendOp(OpDesc("no_such_op")), NotFound);
  EXPECT_THROW(p.global_block().Var("missing"), NotFound);
}

TEST_F(ProgramTest, AttributeTypeErrorsNameOpAndAttribute) {
  OpDesc op = Fill("a", 1).Set("shape", std::string("oops"));
  try {
    op.Attr<std::vector<int64_t>>("shape");
    FAIL();
  } catch (const InvalidArgument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("fill_constant"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'shape'"), std::string::npos) << msg;
  }
  EXPECT_EQ(Fill("a", 1).Attr<float>("value"), 1.0f);  // double → float converts
}

TEST_F(ProgramTest, ProtoRoundTripPreservesEverything) {
  Program p;
  p.set_random_seed(7);
  p.global_block().AppendOp(Fill("a", 2));
  p.global_block().AppendOp(Fill("b", 3));
  p.global_block().AppendOp(OpDesc("sum").In("X", {"a", "b"}).Out("Out", {"c"}));
  p.global_block().Var("a").persistable = true;
  Program q = Program::Parse(p.Serialize());
  EXPECT_EQ(q.DebugString(), p.DebugString());
  EXPECT_EQ(q.random_seed(), 7u);
  EXPECT_TRUE(q.global_block().Var("a").persistable);
  EXPECT_THROW(Program::Parse("not a program", "model file"), Corruption);
}

TEST_F(ProgramTest, PruneKeepsOnlyWhatTargetsNeed) {
  Program p;
  p.global_block().AppendOp(Fill("a", 2));
  p.global_block().AppendOp(Fill("b", 3));
  p.global_block().AppendOp(OpDesc("assign").In("X", {"a"}).Out("Out", {"c"}));
  Program q = p.Prune({"c"});
  ASSERT_EQ(q.global_block().op_size(), 2u);
  EXPECT_FALSE(q.global_block().HasVar("b"));
  EXPECT_THROW(p.Prune({"zzz"}), NotFound);
}

TEST_F(ProgramTest, CloneForTestDropsBackwardOptimizeAndLRSchedOps) {
  Program p;
  VarDesc& counter = p.global_block().CreateVar("step");
  counter.shape = {1};
  counter.dtype = DType::kInt64;
  p.global_block().AppendOp(OpDesc("increment").In("X", {"step"}).Out("Out", {"step"}).Set(
      kOpRoleAttr, int32_t(kOpRoleLRSched)));
  p.global_block().AppendOp(Fill("a", 2));
  p.global_block().AppendOp(Fill("a@GRAD", 1).Set(kOpRoleAttr, int32_t(kOpRoleBackward)));
  p.global_block().AppendOp(
      OpDesc("assign").In("X", {"a"}).Out("Out", {"a"}).Set(kOpRoleAttr, int32_t(kOpRoleOptimize)));
  Program t = p.Clone(true);
  ASSERT_EQ(t.global_block().op_size(), 1u);
  EXPECT_EQ(t.global_block().op(0).type, "fill_constant");
  EXPECT_FALSE(t.global_block().HasVar("a@GRAD"));
  Program full = p.Clone();
  EXPECT_EQ(full.global_block().op_size(), 4u);
  EXPECT_NE(full.id(), p.id());
}

TEST_F(ProgramTest, GuardsAndUniqueNames) {
  Program main, startup;
  {
    ProgramGuard guard(main, startup);
    EXPECT_EQ(&default_main_program(), &main);
    EXPECT_EQ(&default_startup_program(), &startup);
  }
  EXPECT_NE(&default_main_program(), &main);
  UniqueNameGuard names;
  EXPECT_EQ(UniqueName("fc"), "fc_0");
  EXPECT_EQ(UniqueName("fc"), "fc_1");
  {
    UniqueNameGuard inner;
    EXPECT_EQ(UniqueName("fc"), "fc_0");
  }
  EXPECT_EQ(UniqueName("fc"), "fc_2");
}

}  // namespace
}  // namespace flotilla
