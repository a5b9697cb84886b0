#include <gtest/gtest.h>

#include "flotilla/framework/backward.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla {
namespace {

// w is a parameter used twice: loss = sum(w, assign(w)); dloss/dw = 2.
TEST(Backward, SumsGradientsOfVariablesWithSeveralConsumers) {
  RegisterAllOps();
  Program p;
  Block& b = p.global_block();
  VarDesc& w = b.CreateVar("w");
  w.shape = {1};
  w.is_parameter = true;
  w.persistable = true;
  b.AppendOp(OpDesc("assign").In("X", {"w"}).Out("Out", {"w2"}));
  b.AppendOp(OpDesc("sum").In("X", {"w", "w2"}).Out("Out", {"loss"}));
  auto pairs = AppendBackward(b.GetVariable("loss"));
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].first.name(), "w");
  EXPECT_EQ(pairs[0].second.name(), "w@GRAD");
  Scope scope;
  scope.Var("w")->GetMutableTensor()->CopyFrom(Tensor::FromVector<float>({3}, {1}));
  Executor exe;
  auto out = exe.Run(p, {}, {"loss", "w@GRAD"}, &scope);
  EXPECT_EQ(out[0].data<float>()[0], 6.0f);
  EXPECT_EQ(out[1].data<float>()[0], 2.0f);
  // The op that finally writes w@GRAD is tagged with [param, grad].
  bool tagged = false;
  for (const auto& op : b.ops()) {
    auto roles = op->AttrOr<std::vector<std::string>>(kOpRoleVarAttr, {});
    if (roles == std::vector<std::string>{"w", "w@GRAD"}) tagged = true;
  }
  EXPECT_TRUE(tagged);
}

TEST(Backward, StopGradientBlocksTheFlow) {
  RegisterAllOps();
  Program p;
  Block& b = p.global_block();
  for (const char* name : {"w", "v"}) {
    VarDesc& w = b.CreateVar(name);
    w.shape = {1};
    w.is_parameter = true;
    w.persistable = true;
  }
  b.AppendOp(OpDesc("assign").In("X", {"v"}).Out("Out", {"v2"}));
  b.Var("v2").stop_gradient = true;
  b.AppendOp(OpDesc("sum").In("X", {"w", "v2"}).Out("Out", {"loss"}));
  auto pairs = AppendBackward(b.GetVariable("loss"));
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].first.name(), "w");
  EXPECT_FALSE(b.HasVar("v@GRAD"));
}

TEST(Backward, RejectsNonScalarLoss) {
  RegisterAllOps();
  Program p;
  Block& b = p.global_block();
  b.AppendOp(OpDesc("fill_constant").Out("Out", {"x"}).Set("shape", std::vector<int64_t>{2, 2}));
  EXPECT_THROW(AppendBackward(b.GetVariable("x")), InvalidArgument);
}

}  // namespace
}  // namespace flotilla
