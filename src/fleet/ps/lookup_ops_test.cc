// distributed_lookup_table_grad: the gradient a trainer pushes carries each
// id once (repeats summed), so pushes shrink with a batch's repeated ids.
#include <gtest/gtest.h>

#include <functional>

#include "fleet/ps/ps_ops.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/program.h"

namespace flotilla::fleet {
namespace {

// Runs distributed_lookup_table_grad on ids [7, 3, 7, 9, 3, 7] (padding 9),
// three instances of two ids each; `op_setup` adds attributes and inputs.
SelectedRows RunGrad(const std::function<void(OpDesc&)>& op_setup, bool with_click = false,
                     const LoD& ids_lod = {}) {
  RegisterPsOps();
  Program program;
  Block& block = program.global_block();
  VarDesc& ids = block.CreateVar("ids");
  ids.dtype = DType::kInt64;
  ids.shape = {6, 1};
  block.CreateVar("out@GRAD").shape = {6, 2};
  block.CreateVar("label").shape = {3, 1};
  VarDesc& grad = block.CreateVar("w@GRAD");
  grad.type = VarType::kSelectedRows;
  grad.persistable = true;  // kept in the scope after the run
  OpDesc op = OpDesc("distributed_lookup_table_grad")
                  .In("Ids", {"ids"})
                  .In("Out@GRAD", {"out@GRAD"})
                  .Out("W@GRAD", {"w@GRAD"})
                  .Set("dim", int64_t{2})
                  .Set("height", int64_t{100})
                  .Set("padding_idx", int64_t{9});
  op_setup(op);
  block.AppendOp(op);
  FeedMap feed;
  feed["ids"] = Tensor::FromVector<int64_t>({7, 3, 7, 9, 3, 7}, {6, 1});
  feed["ids"].set_lod(ids_lod);
  feed["out@GRAD"] = Tensor::FromVector<float>({1, 2, 10, 20, 100, 200, 5, 5, 30, 40, 1000, 2000}, {6, 2});
  if (with_click) feed["label"] = Tensor::FromVector<float>({1, 0, 1}, {3, 1});
  Executor exe;
  Scope scope;
  exe.Run(program, feed, {}, &scope);
  return scope.GetVar("w@GRAD").GetSelectedRows();
}

TEST(DistributedLookupTableGrad, MergesRepeatedIdsAndDropsPadding) {
  const SelectedRows g = RunGrad([](OpDesc&) {});
  EXPECT_EQ(g.rows(), (std::vector<int64_t>{7, 3}));  // first-seen order, padding id 9 left out
  EXPECT_EQ(g.height(), 100);
  EXPECT_EQ(g.value().ToVector<float>(), (std::vector<float>{1101, 2202, 40, 60}));
}

// With statistics each merged row ends with the id's show (occurrences)
// and click (the labels of the instances it occurs in).
TEST(DistributedLookupTableGrad, CarriesShowAndClickForTheAccessor) {
  const SelectedRows shows = RunGrad([](OpDesc& op) { op.Set("with_stats", true); });
  EXPECT_EQ(shows.value().dims(), (Dims{2, 4}));
  EXPECT_EQ(shows.value().ToVector<float>(), (std::vector<float>{1101, 2202, 3, 0, 40, 60, 2, 0}));
  // Instances: (7, 3) label 1, (7, 9) label 0, (3, 7) label 1.
  const SelectedRows clicks = RunGrad([](OpDesc& op) { op.Set("with_stats", true).In("Click", {"label"}); },
                                      /*with_click=*/true);
  EXPECT_EQ(clicks.value().ToVector<float>(), (std::vector<float>{1101, 2202, 3, 2, 40, 60, 2, 2}));
}

// LoD ids: an instance's ids are its sequence, of any length.
TEST(DistributedLookupTableGrad, ClicksFollowTheSequencesOfLoDIds) {
  // Instances: (7) label 1, (3, 7, 9, 3) label 0, (7) label 1.
  const SelectedRows clicks = RunGrad([](OpDesc& op) { op.Set("with_stats", true).In("Click", {"label"}); },
                                      /*with_click=*/true, LoD{{0, 1, 5, 6}});
  EXPECT_EQ(clicks.value().ToVector<float>(), (std::vector<float>{1101, 2202, 3, 2, 40, 60, 2, 0}));
}

}  // namespace
}  // namespace flotilla::fleet
