#include <gtest/gtest.h>

#include "framework/ops/kernel_test_util.h"
#include "framework/ops/testing/grad_check.h"
#include "framework/ops/testing/sequences.h"

namespace flotilla::testing {

namespace {

OpDesc ConvOp() {
  return OpDesc("sequence_conv").In("X", {"x"}).In("Filter", {"f"}).Out("Out", {"out"});
}

OpDesc SliceOp() {
  return OpDesc("sequence_slice").In("X", {"x"}).In("Offset", {"offset"}).In("Length", {"length"}).Out("Out", {"out"});
}

}  // namespace

void AddSequenceConvGradChecks(GradCheckRegistry& registry) {
  registry.Add({.label = "sequence_conv/ragged 29x2, context 3 from -1",
                .op = ConvOp(),
                .inputs = {{"x", Sequences({29, 2}, kRagged, 71)}, {"f", RandomTensor({6, 3}, -1, 1, 72)}},
                .check = {"x", "f"}});
  registry.Add({.label = "sequence_concat/two ragged inputs",
                .op = OpDesc("sequence_concat").In("X", {"a", "b"}).Out("Out", {"out"}),
                .inputs = {{"a", Sequences({29, 2}, kRagged, 73)}, {"b", Sequences({5, 2}, {{0, 0, 2, 3, 5}}, 74)}},
                .check = {"a", "b"}});
  registry.Add({.label = "sequence_reshape/width 2 to 1",
                .op = OpDesc("sequence_reshape").In("X", {"x"}).Out("Out", {"out"}).Set("new_dim", int32_t{1}),
                .inputs = {{"x", Sequences({29, 2}, kRagged, 75)}},
                .check = {"x"}});
  registry.Add({.label = "sequence_slice/ragged",
                .op = SliceOp(),
                .inputs = {{"x", Sequences({29, 2}, kRagged, 76)},
                           {"offset", Tensor::FromVector<int64_t>({1, 0, 0, 3}, {4, 1})},
                           {"length", Tensor::FromVector<int64_t>({2, 0, 1, 20}, {4, 1})}},
                .check = {"x"}});
}

namespace {

TEST(SequenceConvOps, ContextWindowsStayInsideSequences) {
  // D = 1, context [-1, 0, 1], filter = [1, 10, 100]: out[r] = x[r-1] + 10 x[r] + 100 x[r+1].
  auto x = Tensor::FromVector<float>({1, 2, 3, 4}, {4, 1});
  x.set_lod({{0, 3, 3, 4}});
  auto f = Tensor::FromVector<float>({1, 10, 100}, {3, 1});
  auto out = RunOp(ConvOp(), {{"x", x}, {"f", f}}).at("out");
  EXPECT_EQ(out.ToVector<float>(), (std::vector<float>{210, 321, 32, 40}));
  EXPECT_EQ(out.lod(), x.lod());
}

TEST(SequenceConvOps, ConcatReshapeAndSlice) {
  auto a = Tensor::FromVector<float>({1, 2, 3}, {3, 1});
  a.set_lod({{0, 2, 3}});
  auto b = Tensor::FromVector<float>({7, 8}, {2, 1});
  b.set_lod({{0, 0, 2}});
  auto cat = RunOp(OpDesc("sequence_concat").In("X", {"a", "b"}).Out("Out", {"out"}), {{"a", a}, {"b", b}}).at("out");
  EXPECT_EQ(cat.ToVector<float>(), (std::vector<float>{1, 2, 3, 7, 8}));
  EXPECT_EQ(cat.lod(), (LoD{{0, 2, 5}}));

  auto x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  x.set_lod({{0, 1, 3}});
  auto flat = RunOp(OpDesc("sequence_reshape").In("X", {"x"}).Out("Out", {"out"}).Set("new_dim", int32_t{1}),
                    {{"x", x}}).at("out");
  EXPECT_EQ(flat.dims(), (Dims{6, 1}));
  EXPECT_EQ(flat.lod(), (LoD{{0, 2, 6}}));
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunOp(OpDesc("sequence_reshape").In("X", {"x"}).Out("Out", {"out"}).Set("new_dim", int32_t{4}), {{"x", x}}); },
      {"new_dim 4"});

  auto sliced = RunOp(SliceOp(), {{"x", x},
                                  {"offset", Tensor::FromVector<int64_t>({0, 1}, {2, 1})},
                                  {"length", Tensor::FromVector<int64_t>({1, 1}, {2, 1})}})
                    .at("out");
  EXPECT_EQ(sliced.ToVector<float>(), (std::vector<float>{1, 2, 5, 6}));
  EXPECT_EQ(sliced.lod(), (LoD{{0, 1, 2}}));
  ExpectErrorMentions<InvalidArgument>(
      [&] {
        RunOp(SliceOp(), {{"x", x},
                          {"offset", Tensor::FromVector<int64_t>({0, 1}, {2, 1})},
                          {"length", Tensor::FromVector<int64_t>({1, 2}, {2, 1})}});
      },
      {"slice [1, 3) of sequence 1", "2 steps"});
}

}  // namespace
}  // namespace flotilla::testing
