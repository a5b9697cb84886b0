#include <gtest/gtest.h>

#include "flotilla/common/error.h"
#include "framework/ops/shape_test_util.h"
#include "framework/ops/kernel_test_util.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {
namespace {

OpDesc Unary(const std::string& type) { return OpDesc(type).In("X", {"x"}).Out("Out", {"out"}); }

OpDesc Interp(const std::string& type, int h, int w, bool align_corners, int align_mode) {
  return Unary(type).Set("out_h", int32_t(h)).Set("out_w", int32_t(w))
      .Set("align_corners", align_corners).Set("align_mode", int32_t(align_mode));
}

}  // namespace

void AddLayoutGradChecks(GradCheckRegistry& registry) {
  registry.Add({.label = "flatten/axis 2", .op = Unary("flatten").Set("axis", int32_t{2}),
                .inputs = {{"x", RandomTensor({2, 3, 2, 2})}}, .check = {"x"}});
  registry.Add({.label = "flatten2/axis 1", .op = Unary("flatten2"),
                .inputs = {{"x", RandomTensor({2, 3, 2})}}, .check = {"x"}});
  for (const char* type : {"transpose", "transpose2"}) {
    registry.Add({.label = std::string(type) + "/nchw->nhwc",
                  .op = Unary(type).Set("axis", std::vector<int32_t>{0, 2, 3, 1}),
                  .inputs = {{"x", RandomTensor({2, 3, 2, 2})}}, .check = {"x"}});
  }
  for (const char* mode : {"constant", "reflect", "edge"}) {
    registry.Add({.label = std::string("pad2d/") + mode,
                  .op = Unary("pad2d").Set("paddings", std::vector<int32_t>{1, 0, 2, 1})
                            .Set("mode", std::string(mode)).Set("pad_value", 0.5f),
                  .inputs = {{"x", RandomTensor({1, 2, 3, 4})}}, .check = {"x"}});
  }
  registry.Add({.label = "bilinear_interp/align corners", .op = Interp("bilinear_interp", 5, 3, true, 1),
                .inputs = {{"x", RandomTensor({1, 2, 3, 4})}}, .check = {"x"}});
  registry.Add({.label = "bilinear_interp/half pixel", .op = Interp("bilinear_interp", 6, 7, false, 0),
                .inputs = {{"x", RandomTensor({1, 1, 3, 4})}}, .check = {"x"}});
  registry.Add({.label = "nearest_interp/x2", .op = Interp("nearest_interp", 4, 6, false, 1),
                .inputs = {{"x", RandomTensor({1, 2, 2, 3})}}, .check = {"x"}});
}

TEST(LayoutOps, FlattenAndTransposeShapes) {
  EXPECT_EQ(InferredDims(Unary("flatten").Set("axis", int32_t{1}), {{"x", {-1, 512, 1, 1}}}, "out"),
            (Dims{-1, 512}));
  auto x = Tensor::FromVector<double>({1, 2, 3, 4, 5, 6}, {1, 2, 3});
  auto t = RunOp(Unary("transpose").Set("axis", std::vector<int32_t>{0, 2, 1}), {{"x", x}}).at("out");
  EXPECT_EQ(t.dims(), (Dims{1, 3, 2}));
  EXPECT_EQ(t.ToVector<double>(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

TEST(LayoutOps, PadModes) {
  auto x = Tensor::FromVector<double>({1, 2, 3}, {1, 1, 1, 3});
  auto pad = [&](const char* mode) {
    return RunOp(Unary("pad2d").Set("paddings", std::vector<int32_t>{0, 0, 2, 1}).Set("mode", std::string(mode)),
                 {{"x", x}}).at("out").ToVector<double>();
  };
  EXPECT_EQ(pad("constant"), (std::vector<double>{0, 0, 1, 2, 3, 0}));
  EXPECT_EQ(pad("reflect"), (std::vector<double>{3, 2, 1, 2, 3, 2}));
  EXPECT_EQ(pad("edge"), (std::vector<double>{1, 1, 1, 2, 3, 3}));
}

TEST(LayoutOps, BilinearAlignCornersKeepsCorners) {
  auto x = Tensor::FromVector<double>({0, 1, 2, 3}, {1, 1, 2, 2});
  auto out = RunOp(Interp("bilinear_interp", 3, 3, true, 1), {{"x", x}}).at("out").ToVector<double>();
  EXPECT_EQ(out, (std::vector<double>{0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3}));
}

TEST(LayoutOps, TransposeAxisMustBeAPermutation) {
  ExpectErrorMentions<InvalidArgument>(
      [] { InferredDims(Unary("transpose").Set("axis", std::vector<int32_t>{0, 0}), {{"x", {2, 3}}}, "out"); },
      {"transpose", "permutation"});
}

}  // namespace flotilla::testing
