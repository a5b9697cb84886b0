#include <gtest/gtest.h>

#include "framework/ops/kernel_test_util.h"
#include "framework/ops/testing/grad_check.h"
#include "framework/ops/testing/sequences.h"

namespace flotilla::testing {

namespace {

OpDesc PadOp() {
  return OpDesc("sequence_pad").In("X", {"x"}).In("PadValue", {"pad"}).Out("Out", {"out"}).Out("Length", {"len"});
}

OpDesc UnpadOp() { return OpDesc("sequence_unpad").In("X", {"x"}).In("Length", {"len"}).Out("Out", {"out"}); }

}  // namespace

void AddSequencePadGradChecks(GradCheckRegistry& registry) {
  registry.Add({.label = "sequence_pad/ragged 29x2, padded to 27",
                .op = PadOp().Set("padded_length", int32_t{27}),
                .inputs = {{"x", Sequences({29, 2}, kRagged, 61)}, {"pad", Tensor::Scalar<double>(0.5)}},
                .check = {"x"},
                .outputs = {"out"}});
  registry.Add({.label = "sequence_unpad/4x25x2, lengths 3 0 1 25",
                .op = UnpadOp(),
                .inputs = {{"x", RandomTensor({4, 25, 2}, -1, 1, 62)},
                           {"len", Tensor::FromVector<int64_t>({3, 0, 1, 25}, {4})}},
                .check = {"x"}});
}

namespace {

TEST(SequencePadOps, PadsWithValueRowAndReportsLengths) {
  auto x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  x.set_lod({{0, 2, 2, 3}});
  auto outs = RunOp(PadOp(), {{"x", x}, {"pad", Tensor::FromVector<float>({-1, -2}, {2})}});
  EXPECT_EQ(outs.at("out").dims(), (Dims{3, 2, 2}));
  EXPECT_EQ(outs.at("out").ToVector<float>(),
            (std::vector<float>{1, 2, 3, 4, -1, -2, -1, -2, 5, 6, -1, -2}));
  EXPECT_EQ(outs.at("len").ToVector<int64_t>(), (std::vector<int64_t>{2, 0, 1}));
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunOp(PadOp().Set("padded_length", int32_t{1}), {{"x", x}, {"pad", Tensor::Scalar<float>(0)}}); },
      {"padded_length 1", "longest sequence (2 steps)"});
}

TEST(SequencePadOps, UnpadInvertsPad) {
  auto x = RandomTensor({29, 3}, -1, 1, 7);
  x.set_lod(kRagged);
  auto padded = RunOp(PadOp(), {{"x", x}, {"pad", Tensor::Scalar<double>(0)}});
  auto back = RunOp(UnpadOp(), {{"x", padded.at("out")}, {"len", padded.at("len")}}).at("out");
  EXPECT_EQ(back.dims(), x.dims());
  EXPECT_EQ(back.lod(), x.lod());
  EXPECT_EQ(back.ToVector<double>(), x.ToVector<double>());
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunOp(UnpadOp(), {{"x", padded.at("out")}, {"len", Tensor::FromVector<int64_t>({1, 2, 99, 0}, {4})}}); },
      {"Length[2] = 99"});
}

TEST(SequencePadOps, MaskFromLengths) {
  auto op = OpDesc("sequence_mask").In("X", {"x"}).Out("Y", {"y"});
  auto y = RunOp(op, {{"x", Tensor::FromVector<int64_t>({2, 0, 3}, {3})}}).at("y");
  EXPECT_EQ(y.dims(), (Dims{3, 3}));
  EXPECT_EQ(y.ToVector<int64_t>(), (std::vector<int64_t>{1, 1, 0, 0, 0, 0, 1, 1, 1}));
  auto f = RunOp(OpDesc(op).Set("maxlen", int32_t{4}).Set("out_dtype", static_cast<int32_t>(DType::kFloat32)),
                 {{"x", Tensor::FromVector<int32_t>({1, 4}, {2, 1})}})
               .at("y");
  EXPECT_EQ(f.dims(), (Dims{2, 1, 4}));
  EXPECT_EQ(f.ToVector<float>(), (std::vector<float>{1, 0, 0, 0, 1, 1, 1, 1}));
}

TEST(SequencePadOps, EnumerateWindowsWithinSequences) {
  auto x = Tensor::FromVector<int64_t>({1, 2, 3, 4, 5}, {5, 1});
  x.set_lod({{0, 3, 3, 5}});
  auto out = RunOp(OpDesc("sequence_enumerate").In("X", {"x"}).Out("Out", {"out"}).Set("win_size", int32_t{2}),
                   {{"x", x}})
                 .at("out");
  EXPECT_EQ(out.ToVector<int64_t>(), (std::vector<int64_t>{1, 2, 2, 3, 3, 0, 4, 5, 5, 0}));
  EXPECT_EQ(out.lod(), x.lod());
}

}  // namespace
}  // namespace flotilla::testing
