#include <gtest/gtest.h>

#include <cmath>

#include "flotilla/framework/executor.h"
#include "flotilla/framework/program.h"
#include "framework/ops/kernel_test_util.h"
#include "framework/ops/testing/grad_check.h"
#include "framework/ops/testing/sequences.h"

namespace flotilla::testing {

namespace {

OpDesc PoolOp(const std::string& type) {
  return OpDesc("sequence_pool").In("X", {"x"}).Out("Out", {"out"}).Set("pooltype", type);
}

}  // namespace

void AddSequenceGradChecks(GradCheckRegistry& registry) {
  for (const char* type : {"SUM", "AVERAGE", "SQRT", "MAX", "FIRST", "LAST"}) {
    registry.Add({.label = std::string("sequence_pool/") + type + " ragged 29x2",
                  .op = PoolOp(type).Out("MaxIndex", {"max_index"}),
                  .inputs = {{"x", Sequences({29, 2}, kRagged, 41)}},
                  .check = {"x"}});
  }
  registry.Add({.label = "sequence_pool/SUM 2-level, 3-D rows",
                .op = PoolOp("SUM"),
                .inputs = {{"x", Sequences({5, 2, 2}, {{0, 1, 3}, {0, 2, 2, 5}}, 42)}},
                .check = {"x"}});
  registry.Add({.label = "sequence_softmax/ragged 29x1",
                .op = OpDesc("sequence_softmax").In("X", {"x"}).Out("Out", {"out"}),
                .inputs = {{"x", Sequences({29, 1}, kRagged, 43)}},
                .check = {"x"}});
  registry.Add({.label = "sequence_reverse/ragged 29x3",
                .op = OpDesc("sequence_reverse").In("X", {"x"}).Out("Y", {"y"}),
                .inputs = {{"x", Sequences({29, 3}, kRagged, 44)}},
                .check = {"x"}});
  registry.Add({.label = "sequence_expand_as/4 rows by ragged Y",
                .op = OpDesc("sequence_expand_as").In("X", {"x"}).In("Y", {"y"}).Out("Out", {"out"}),
                .inputs = {{"x", RandomTensor({4, 2}, -1, 1, 45)}, {"y", Sequences({29, 1}, kRagged, 46)}},
                .check = {"x"}});
  registry.Add({.label = "sequence_expand/LoD X by ragged Y",
                .op = OpDesc("sequence_expand").In("X", {"x"}).In("Y", {"y"}).Out("Out", {"out"}),
                .inputs = {{"x", Sequences({6, 2}, {{0, 2, 3, 3, 6}}, 47)},
                           {"y", Sequences({29, 1}, kRagged, 48)}},
                .check = {"x"}});
  registry.Add({.label = "sequence_expand/dense X, ref_level 0 of 2-level Y",
                .op = OpDesc("sequence_expand")
                          .In("X", {"x"})
                          .In("Y", {"y"})
                          .Out("Out", {"out"})
                          .Set("ref_level", int32_t{0}),
                .inputs = {{"x", RandomTensor({2, 3}, -1, 1, 49)},
                           {"y", Sequences({5, 1}, {{0, 3, 4}, {0, 1, 1, 3, 5}}, 50)}},
                .check = {"x"}});
}

namespace {

std::map<std::string, Tensor> RunPool(const std::string& type, const Tensor& x, float pad = 0) {
  return RunOp(PoolOp(type).Out("MaxIndex", {"max_index"}).Set("pad_value", pad), {{"x", x}});
}

TEST(SequenceOps, PoolEveryTypeWithEmptySequence) {
  auto x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  x.set_lod({{0, 3, 3, 4}});
  const std::map<std::string, std::vector<double>> want = {
      {"SUM", {9, 12, -1, -1, 7, 8}},
      {"AVERAGE", {3, 4, -1, -1, 7, 8}},
      {"SQRT", {9 / std::sqrt(3.0), 12 / std::sqrt(3.0), -1, -1, 7, 8}},
      {"MAX", {5, 6, -1, -1, 7, 8}},
      {"FIRST", {1, 2, -1, -1, 7, 8}},
      {"LAST", {5, 6, -1, -1, 7, 8}}};
  for (const auto& [type, values] : want) {
    auto outs = RunPool(type, x, -1);
    EXPECT_EQ(outs.at("out").dims(), (Dims{3, 2})) << type;
    ExpectValuesNear(outs.at("out"), values, 1e-5, type);
    EXPECT_FALSE(outs.at("out").has_lod()) << type;
  }
  EXPECT_EQ(RunPool("MAX", x).at("max_index").ToVector<int32_t>(), (std::vector<int32_t>{2, 2, -1, -1, 3, 3}));
}

TEST(SequenceOps, PoolKeepsOuterLevels) {
  auto x = Tensor::FromVector<float>({1, 2, 3, 4, 5}, {5, 1});
  x.set_lod({{0, 1, 3}, {0, 2, 2, 5}});
  auto out = RunPool("SUM", x).at("out");
  ExpectValuesNear(out, {3, 0, 12}, 1e-6, "sum");
  EXPECT_EQ(out.lod(), (LoD{{0, 1, 3}}));
}

TEST(SequenceOps, PoolRefusesDenseInputAndUnknownType) {
  auto dense = Tensor::FromVector<float>({1, 2}, {2, 1});
  ExpectErrorMentions<InvalidArgument>([&] { RunPool("SUM", dense); }, {"sequence_pool", "LoD tensor"});
  auto bad = dense;
  bad.set_lod({{0, 3}});
  ExpectErrorMentions<InvalidArgument>([&] { RunPool("SUM", bad); }, {"invalid LoD", "2 rows"});
  bad.set_lod({{0, 2}});
  ExpectErrorMentions<InvalidArgument>([&] { RunPool("MEDIAN", bad); }, {"'pooltype'", "MEDIAN"});
}

TEST(SequenceOps, SoftmaxPerSequence) {
  auto x = Tensor::FromVector<double>({0, std::log(3.0), 5, 1, 1}, {5, 1});
  x.set_lod({{0, 2, 2, 3, 5}});
  auto out = RunOp(OpDesc("sequence_softmax").In("X", {"x"}).Out("Out", {"out"}), {{"x", x}}).at("out");
  ExpectValuesNear(out, {0.25, 0.75, 1, 0.5, 0.5}, 1e-12, "softmax");
  EXPECT_EQ(out.lod(), x.lod());
}

TEST(SequenceOps, ReverseEachSequence) {
  auto x = Tensor::FromVector<int64_t>({1, 2, 3, 4, 5, 6}, {6, 1});
  x.set_lod({{0, 3, 3, 4, 6}});
  auto y = RunOp(OpDesc("sequence_reverse").In("X", {"x"}).Out("Y", {"y"}), {{"x", x}}).at("y");
  EXPECT_EQ(y.ToVector<int64_t>(), (std::vector<int64_t>{3, 2, 1, 4, 6, 5}));
  EXPECT_EQ(y.lod(), x.lod());
}

TEST(SequenceOps, ExpandLoDAndDenseX) {
  // X's sequences [a b] [c d] repeated by Y's level-0 lengths 2 and 2.
  auto x = Tensor::FromVector<float>({1, 2, 3, 4}, {4, 1});
  x.set_lod({{0, 2, 4}});
  auto y = Tensor::FromVector<float>({0, 0, 0, 0, 0, 0, 0, 0}, {8, 1});
  y.set_lod({{0, 2, 4}, {0, 3, 6, 7, 8}});
  auto op = OpDesc("sequence_expand").In("X", {"x"}).In("Y", {"y"}).Out("Out", {"out"});
  auto out = RunOp(OpDesc(op).Set("ref_level", int32_t{0}), {{"x", x}, {"y", y}}).at("out");
  EXPECT_EQ(out.ToVector<float>(), (std::vector<float>{1, 2, 1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(out.lod(), (LoD{{0, 2, 4, 6, 8}}));
  // Dense X: row i repeated by sequence i of Y's last level; no offsets out.
  auto dense = Tensor::FromVector<float>({1, 2, 3}, {3, 1});
  auto y2 = Tensor::FromVector<float>({0, 0, 0, 0, 0, 0}, {6, 1});
  y2.set_lod({{0, 2, 3, 6}});
  auto out2 = RunOp(op, {{"x", dense}, {"y", y2}}).at("out");
  EXPECT_EQ(out2.ToVector<float>(), (std::vector<float>{1, 1, 2, 3, 3, 3}));
  EXPECT_FALSE(out2.has_lod());
  ExpectErrorMentions<InvalidArgument>([&] { RunOp(op, {{"x", dense}, {"y", y}}); },
                                       {"sequence_expand", "3 rows", "4 sequences"});
}

TEST(SequenceOps, ExpandAsTakesYOffsets) {
  auto x = Tensor::FromVector<float>({1, 2, 3}, {3, 1});
  auto y = Tensor::FromVector<float>({0, 0, 0}, {3, 1});
  y.set_lod({{0, 0, 2, 3}});
  auto out = RunOp(OpDesc("sequence_expand_as").In("X", {"x"}).In("Y", {"y"}).Out("Out", {"out"}),
                   {{"x", x}, {"y", y}}).at("out");
  EXPECT_EQ(out.ToVector<float>(), (std::vector<float>{2, 2, 3}));
  EXPECT_EQ(out.lod(), y.lod());
}

TEST(SequenceOps, LoDFlowsThroughLookupAndElementwiseOps) {
  RegisterAllOps();
  Program program;
  Block& block = program.global_block();
  block.CreateVar("w").shape = {2, 2};
  block.CreateVar("b").shape = {2};
  VarDesc& ids_var = block.CreateVar("ids");
  ids_var.shape = {-1, 1};
  ids_var.dtype = DType::kInt64;
  ids_var.lod_level = 1;
  block.AppendOp(OpDesc("lookup_table").In("W", {"w"}).In("Ids", {"ids"}).Out("Out", {"emb"}));
  block.AppendOp(OpDesc("elementwise_add").In("X", {"emb"}).In("Y", {"b"}).Out("Out", {"sum"}));
  block.AppendOp(OpDesc("relu").In("X", {"sum"}).Out("Out", {"act"}));
  block.AppendOp(OpDesc("sequence_pool").In("X", {"act"}).Out("Out", {"pooled"}).Set("pooltype", std::string("SUM")));
  EXPECT_EQ(block.Var("act").lod_level, 1);
  EXPECT_EQ(block.Var("pooled").lod_level, 0);
  auto ids = Tensor::FromVector<int64_t>({0, 1, 1}, {3, 1});
  ids.set_lod({{0, 1, 3}});
  Executor exe;
  Scope scope;
  FeedMap feed = {{"w", Tensor::FromVector<float>({1, -1, 2, 3}, {2, 2})},
                  {"ids", ids},
                  {"b", Tensor::FromVector<float>({0, 0}, {2})}};
  auto got = exe.Run(program, feed, {"act", "pooled"}, &scope);
  EXPECT_EQ(got[0].lod(), ids.lod());
  EXPECT_EQ(got[1].ToVector<float>(), (std::vector<float>{1, 0, 4, 6}));
  // The next batch is dense: no offsets survive from the last one, so the
  // pool refuses it.
  ids.set_lod({});
  feed["ids"] = ids;
  ExpectErrorMentions<InvalidArgument>([&] { exe.Run(program, feed, {"act"}, &scope); },
                                       {"sequence_pool", "LoD tensor"});
}

}  // namespace
}  // namespace flotilla::testing
