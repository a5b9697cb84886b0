#include <gtest/gtest.h>

#include "flotilla/framework/executor.h"
#include "flotilla/framework/program.h"
#include "framework/backward_internal.h"
#include "framework/ops/kernel_test_util.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {

void AddLookupTableGradChecks(GradCheckRegistry& registry) {
  registry.Add({.label = "lookup_table/5x3, repeated ids",
                .op = OpDesc("lookup_table").In("W", {"w"}).In("Ids", {"ids"}).Out("Out", {"out"}),
                .inputs = {{"w", RandomTensor({5, 3}, -1, 1, 31)},
                           {"ids", Tensor::FromVector<int64_t>({4, 0, 4, 2}, {4, 1})}},
                .check = {"w"}});
  registry.Add({.label = "lookup_table/padding_idx 2",
                .op = OpDesc("lookup_table")
                          .In("W", {"w"})
                          .In("Ids", {"ids"})
                          .Out("Out", {"out"})
                          .Set("padding_idx", int64_t{2}),
                .inputs = {{"w", RandomTensor({4, 2}, -1, 1, 32)},
                           {"ids", Tensor::FromVector<int64_t>({2, 1, 2}, {3})}},
                .check = {"w"}});
  registry.Add({.label = "lookup_table_v2/ids 2x2",
                .op = OpDesc("lookup_table_v2").In("W", {"w"}).In("Ids", {"ids"}).Out("Out", {"out"}),
                .inputs = {{"w", RandomTensor({3, 2}, -1, 1, 33)},
                           {"ids", Tensor::FromVector<int64_t>({0, 2, 2, 1}, {2, 2})}},
                .check = {"w"}});
}

namespace {

OpDesc LookupOp(const std::string& type = "lookup_table") {
  return OpDesc(type).In("W", {"w"}).In("Ids", {"ids"}).Out("Out", {"out"});
}

Tensor Table() { return Tensor::FromVector<float>({0, 1, 10, 11, 20, 21}, {3, 2}); }

TEST(LookupTableOps, GathersRowsAndZeroesPadding) {
  auto ids = Tensor::FromVector<int64_t>({2, 0, 1, 2}, {4, 1});
  auto outs = RunOp(LookupOp().Set("padding_idx", int64_t{1}), {{"w", Table()}, {"ids", ids}});
  EXPECT_EQ(outs.at("out").dims(), (Dims{4, 2}));
  EXPECT_EQ(outs.at("out").ToVector<float>(), (std::vector<float>{20, 21, 0, 1, 0, 0, 20, 21}));
}

TEST(LookupTableOps, OutShapeForFlatIdsAndV2) {
  auto flat = RunOp(LookupOp(), {{"w", Table()}, {"ids", Tensor::FromVector<int64_t>({1, 1, 0}, {3})}});
  EXPECT_EQ(flat.at("out").dims(), (Dims{3, 2}));
  auto v2 = RunOp(LookupOp("lookup_table_v2"),
                  {{"w", Table()}, {"ids", Tensor::FromVector<int64_t>({1, 0}, {2, 1})}});
  EXPECT_EQ(v2.at("out").dims(), (Dims{2, 1, 2}));
  EXPECT_EQ(v2.at("out").ToVector<float>(), (std::vector<float>{10, 11, 0, 1}));
}

TEST(LookupTableOps, IdOutOfRangeNamesIdAndTableSize) {
  auto ids = Tensor::FromVector<int64_t>({0, 7}, {2, 1});
  ExpectErrorMentions<InvalidArgument>([&] { RunOp(LookupOp(), {{"w", Table()}, {"ids", ids}}); },
                                       {"lookup_table", "id 7", "3 rows"});
  auto negative = Tensor::FromVector<int64_t>({-1}, {1, 1});
  ExpectErrorMentions<InvalidArgument>([&] { RunOp(LookupOp(), {{"w", Table()}, {"ids", negative}}); },
                                       {"id -1"});
}

TEST(LookupTableOps, RejectsBadPaddingIdxAndIdType) {
  auto ids = Tensor::FromVector<int64_t>({0}, {1, 1});
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunOp(LookupOp().Set("padding_idx", int64_t{3}), {{"w", Table()}, {"ids", ids}}); },
      {"'padding_idx'"});
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunOp(LookupOp(), {{"w", Table()}, {"ids", Tensor::FromVector<int32_t>({0}, {1, 1})}}); },
      {"Ids", "int64"});
}

// Runs lookup_table_grad with the given is_sparse on a scope holding W, Ids
// and Out@GRAD; the gradient lands in "dw".
void RunLookupGrad(Scope& scope, bool is_sparse) {
  RunKernel(OpDesc("lookup_table_grad")
                .In("W", {"w"})
                .In("Ids", {"ids"})
                .In("Out@GRAD", {"dout"})
                .Out("W@GRAD", {"dw"})
                .Set("is_sparse", is_sparse)
                .Set("padding_idx", int64_t{0}),
            scope);
}

TEST(LookupTableOps, SparseGradEqualsDenseGrad) {
  Scope dense_scope, sparse_scope;
  for (Scope* s : {&dense_scope, &sparse_scope}) {
    SetTensor(*s, "w", RandomTensor({4, 3}, -1, 1, 5));
    SetTensor(*s, "ids", Tensor::FromVector<int64_t>({3, 1, 3, 0}, {4, 1}));
    SetTensor(*s, "dout", RandomTensor({4, 3}, -1, 1, 6));
  }
  RunLookupGrad(dense_scope, false);
  RunLookupGrad(sparse_scope, true);
  const Tensor& dense = dense_scope.GetVar("dw").GetTensor();
  const SelectedRows& rows = sparse_scope.GetVar("dw").GetSelectedRows();
  EXPECT_EQ(rows.rows(), (std::vector<int64_t>{3, 1, 3, 0}));
  EXPECT_EQ(rows.height(), 4);
  EXPECT_EQ(rows.value().dims(), (Dims{4, 3}));
  Tensor from_rows = rows.ToDense();
  ASSERT_EQ(from_rows.dims(), dense.dims());
  ExpectValuesNear(from_rows, Values(dense), 1e-12, "sparse vs dense");
  // Row 0 is padding: no gradient.
  for (int j = 0; j < 3; ++j) EXPECT_EQ(dense.data<double>()[j], 0.0);
  EXPECT_NE(dense.data<double>()[9], 0.0);
}

TEST(LookupTableOps, DenseGradSumsRepeatedIds) {
  Scope scope;
  SetTensor(scope, "w", Tensor::FromVector<float>({0, 0, 0, 0}, {2, 2}));
  SetTensor(scope, "ids", Tensor::FromVector<int64_t>({1, 1}, {2}));
  SetTensor(scope, "dout", Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2}));
  RunKernel(OpDesc("lookup_table_grad").In("W", {"w"}).In("Ids", {"ids"}).In("Out@GRAD", {"dout"})
                .Out("W@GRAD", {"dw"}), scope);
  EXPECT_EQ(scope.GetVar("dw").GetTensor().ToVector<float>(), (std::vector<float>{0, 0, 4, 6}));
}


VarDesc& DeclareVar(Block& block, const std::string& name, DType dtype, Dims shape) {
  VarDesc& v = block.CreateVar(name);
  v.dtype = dtype;
  v.shape = std::move(shape);
  return v;
}

// is_sparse through backward: W@GRAD is declared SelectedRows, and sgd
// applies it in place to the looked-up rows only (a repeated id adds twice).
TEST(LookupTableOps, SparseGradFlowsThroughBackwardIntoSgd) {
  RegisterAllOps();
  Program program;
  Block& block = program.global_block();
  DeclareVar(block, "w", DType::kFloat64, {4, 2}).persistable = true;
  DeclareVar(block, "lr", DType::kFloat64, {1}).persistable = true;
  DeclareVar(block, "ids", DType::kInt64, {-1, 1}).stop_gradient = true;
  block.AppendOp(LookupOp().Set("is_sparse", true));
  DeclareVar(block, "out@GRAD", DType::kFloat64, {-1, 2});
  auto grads = internal::AppendBackwardOps(block, {"out"}, {"ids", "lr"});
  ASSERT_TRUE(grads.count("w"));
  EXPECT_EQ(block.Var(grads.at("w")).type, VarType::kSelectedRows);
  block.AppendOp(OpDesc("sgd").In("Param", {"w"}).In("Grad", {grads.at("w")}).In("LearningRate", {"lr"})
                     .Out("ParamOut", {"w"}));
  Scope scope;
  SetTensor(scope, "w", Tensor::FromVector<double>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}));
  SetTensor(scope, "lr", Tensor::Scalar<double>(.5));
  Executor exe;
  exe.Run(program,
          {{"ids", Tensor::FromVector<int64_t>({2, 0, 2}, {3, 1})},
           {"out@GRAD", Tensor::FromVector<double>({1, 1, 2, 2, 4, 4}, {3, 2})}},
          {}, &scope);
  ExpectValuesNear(scope.GetVar("w").GetTensor(), {0, 1, 3, 4, 2.5, 3.5, 7, 8}, 1e-12, "w");
}

}  // namespace
}  // namespace flotilla::testing
