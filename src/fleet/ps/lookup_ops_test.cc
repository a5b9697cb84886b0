// distributed_lookup_table_grad: the gradient a trainer pushes carries each
// id once (repeats summed), so pushes shrink with a batch's repeated ids.
#include <gtest/gtest.h>

#include "fleet/ps/ps_ops.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/program.h"

namespace flotilla::fleet {
namespace {

TEST(DistributedLookupTableGrad, MergesRepeatedIdsAndDropsPadding) {
  RegisterPsOps();
  Program program;
  Block& block = program.global_block();
  VarDesc& ids = block.CreateVar("ids");
  ids.dtype = DType::kInt64;
  ids.shape = {6, 1};
  block.CreateVar("out@GRAD").shape = {6, 2};
  VarDesc& grad = block.CreateVar("w@GRAD");
  grad.type = VarType::kSelectedRows;
  grad.persistable = true;  // kept in the scope after the run
  block.AppendOp(OpDesc("distributed_lookup_table_grad")
                     .In("Ids", {"ids"})
                     .In("Out@GRAD", {"out@GRAD"})
                     .Out("W@GRAD", {"w@GRAD"})
                     .Set("dim", int64_t{2})
                     .Set("height", int64_t{100})
                     .Set("padding_idx", int64_t{9}));
  FeedMap feed;
  feed["ids"] = Tensor::FromVector<int64_t>({7, 3, 7, 9, 3, 7}, {6, 1});
  feed["out@GRAD"] = Tensor::FromVector<float>({1, 2, 10, 20, 100, 200, 5, 5, 30, 40, 1000, 2000}, {6, 2});
  Executor exe;
  Scope scope;
  exe.Run(program, feed, {}, &scope);
  const SelectedRows& g = scope.GetVar("w@GRAD").GetSelectedRows();
  EXPECT_EQ(g.rows(), (std::vector<int64_t>{7, 3}));  // first-seen order, padding id 9 left out
  EXPECT_EQ(g.height(), 100);
  EXPECT_EQ(g.value().ToVector<float>(), (std::vector<float>{1101, 2202, 40, 60}));
}

}  // namespace
}  // namespace flotilla::fleet
