#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "flotilla/common/error.h"
#include "framework/ops/shape_test_util.h"
#include "framework/ops/kernel_test_util.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {
namespace {

struct ConvCase {
  std::string label;
  Dims x, w;
  std::vector<int32_t> strides{1, 1}, paddings{0, 0}, dilations{1, 1};
  int groups = 1;
  std::string algo = "EXPLICIT";
};

OpDesc Conv(const std::string& type, const ConvCase& c) {
  return OpDesc(type)
      .In("Input", {"x"})
      .In("Filter", {"w"})
      .Out("Output", {"out"})
      .Set("strides", c.strides)
      .Set("paddings", c.paddings)
      .Set("dilations", c.dilations)
      .Set("groups", int32_t(c.groups))
      .Set("padding_algorithm", c.algo);
}

// Direct definition of conv2d for checking the im2col kernels.
std::vector<double> ReferenceConv(const Tensor& x, const Tensor& w, const ConvCase& c,
                                  const Dims& out) {
  const auto& xd = x.dims();
  const auto& wd = w.dims();
  const int64_t cg = wd[1], ocg = wd[0] / c.groups;
  const int64_t pt = c.paddings[0], pl = c.paddings.size() == 4 ? c.paddings[2] : c.paddings[1];
  std::vector<double> r(Numel(out), 0.0);
  const double* xp = x.data<double>();
  const double* wp = w.data<double>();
  for (int64_t n = 0; n < out[0]; ++n)
    for (int64_t o = 0; o < out[1]; ++o)
      for (int64_t oh = 0; oh < out[2]; ++oh)
        for (int64_t ow = 0; ow < out[3]; ++ow) {
          double acc = 0;
          const int64_t g = o / ocg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t kh = 0; kh < wd[2]; ++kh)
              for (int64_t kw = 0; kw < wd[3]; ++kw) {
                const int64_t ih = oh * c.strides[0] - pt + kh * c.dilations[0];
                const int64_t iw = ow * c.strides[1] - pl + kw * c.dilations[1];
                if (ih < 0 || ih >= xd[2] || iw < 0 || iw >= xd[3]) continue;
                acc += xp[((n * xd[1] + g * cg + ci) * xd[2] + ih) * xd[3] + iw] *
                       wp[((o * cg + ci) * wd[2] + kh) * wd[3] + kw];
              }
          r[((n * out[1] + o) * out[2] + oh) * out[3] + ow] = acc;
        }
  return r;
}

std::vector<ConvCase> ForwardGrid() {
  return {
      {.label = "3x3 pad 1", .x = {2, 3, 7, 6}, .w = {4, 3, 3, 3}, .paddings = {1, 1}},
      {.label = "stride 2", .x = {3, 2, 9, 9}, .w = {5, 2, 3, 3}, .strides = {2, 2}, .paddings = {1, 1}},
      {.label = "7x7 stride 2 pad 3", .x = {1, 3, 16, 16}, .w = {4, 3, 7, 7}, .strides = {2, 2}, .paddings = {3, 3}},
      {.label = "pointwise", .x = {2, 6, 5, 5}, .w = {3, 6, 1, 1}},
      {.label = "pointwise stride 2", .x = {2, 6, 6, 6}, .w = {3, 6, 1, 1}, .strides = {2, 2}},
      {.label = "dilation 2", .x = {1, 2, 9, 8}, .w = {2, 2, 3, 3}, .paddings = {2, 2}, .dilations = {2, 2}},
      {.label = "groups 2", .x = {2, 4, 6, 6}, .w = {6, 2, 3, 3}, .paddings = {1, 1}, .groups = 2},
      {.label = "depthwise", .x = {2, 3, 6, 5}, .w = {3, 1, 3, 3}, .strides = {2, 1}, .paddings = {1, 1}, .groups = 3},
      {.label = "depthwise x2", .x = {1, 2, 5, 5}, .w = {4, 1, 3, 3}, .paddings = {1, 1}, .groups = 2},
      {.label = "asymmetric pads", .x = {1, 2, 5, 6}, .w = {3, 2, 2, 3}, .paddings = {0, 1, 2, 1}},
      {.label = "SAME stride 2", .x = {2, 2, 7, 8}, .w = {3, 2, 3, 3}, .strides = {2, 2}, .algo = "SAME"},
      {.label = "VALID", .x = {1, 2, 6, 6}, .w = {2, 2, 3, 3}, .paddings = {5, 5}, .algo = "VALID"},
      {.label = "big batch blocks", .x = {40, 2, 3, 3}, .w = {3, 2, 3, 3}, .paddings = {1, 1}},
      // Maps so small that some taps read only padding (left out of the GEMMs).
      {.label = "1x1 map 3x3 pad 1", .x = {3, 4, 1, 1}, .w = {5, 4, 3, 3}, .paddings = {1, 1}},
      {.label = "one column 3x3 pad 1", .x = {2, 2, 3, 1}, .w = {3, 2, 3, 3}, .paddings = {1, 1}},
      {.label = "2x2 map 5x5 pad 2 groups 2", .x = {2, 4, 2, 2}, .w = {4, 2, 5, 5}, .paddings = {2, 2}, .groups = 2},
  };
}

}  // namespace

void AddConvGradChecks(GradCheckRegistry& registry) {
  unsigned seed = 10;
  for (const ConvCase& c : ForwardGrid()) {
    if (Numel(c.x) > 300) continue;  // keep finite differences quick
    registry.Add({.label = "conv2d/" + c.label,
                  .op = Conv("conv2d", c),
                  .inputs = {{"x", RandomTensor(c.x, -1, 1, seed++)}, {"w", RandomTensor(c.w, -1, 1, seed++)}},
                  .check = {"x", "w"}});
  }
  ConvCase dw{.label = "", .x = {1, 2, 4, 4}, .w = {2, 1, 3, 3}, .paddings = {1, 1}, .groups = 2};
  registry.Add({.label = "depthwise_conv2d/3x3",
                .op = Conv("depthwise_conv2d", dw),
                .inputs = {{"x", RandomTensor(dw.x, -1, 1, 3)}, {"w", RandomTensor(dw.w, -1, 1, 4)}},
                .check = {"x", "w"}});
  // transpose filter: [in_channels, out_channels / groups, kh, kw]
  ConvCase t{.label = "", .x = {2, 3, 3, 3}, .w = {3, 2, 3, 3}, .strides = {2, 2}, .paddings = {1, 1}};
  registry.Add({.label = "conv2d_transpose/stride 2",
                .op = Conv("conv2d_transpose", t),
                .inputs = {{"x", RandomTensor(t.x, -1, 1, 5)}, {"w", RandomTensor(t.w, -1, 1, 6)}},
                .check = {"x", "w"}});
  ConvCase tg{.label = "", .x = {1, 4, 3, 2}, .w = {4, 1, 2, 2}, .groups = 2};
  registry.Add({.label = "conv2d_transpose/groups 2",
                .op = Conv("conv2d_transpose", tg).Set("output_padding", std::vector<int32_t>{0, 0}),
                .inputs = {{"x", RandomTensor(tg.x, -1, 1, 7)}, {"w", RandomTensor(tg.w, -1, 1, 8)}},
                .check = {"x", "w"}});
}

TEST(ConvOps, Conv2dMatchesDirectDefinition) {
  unsigned seed = 1;
  for (const ConvCase& c : ForwardGrid()) {
    SCOPED_TRACE(c.label);
    Tensor x = RandomTensor(c.x, -1, 1, seed++), w = RandomTensor(c.w, -1, 1, seed++);
    Tensor out = RunOp(Conv("conv2d", c), {{"x", x}, {"w", w}}).at("out");
    ConvCase explicit_pads = c;
    if (c.algo == "SAME") {  // what SAME chose: h 7 -> 4 pads 1 + 1, w 8 -> 4 pads 0 + 1
      explicit_pads.paddings = {1, 1, 0, 1};
    } else if (c.algo == "VALID") {
      explicit_pads.paddings = {0, 0};
    }
    ExpectValuesNear(out, ReferenceConv(x, w, explicit_pads, out.dims()), 1e-9, c.label);
  }
}

TEST(ConvOps, SameKeepsCeilOfInputOverStride) {
  ConvCase c{.label = "", .x = {-1, 3, 15, 16}, .w = {8, 3, 5, 5}, .strides = {2, 3}, .algo = "SAME"};
  EXPECT_EQ(InferredDims(Conv("conv2d", c), {{"x", c.x}, {"w", c.w}}, "out"), (Dims{-1, 8, 8, 6}));
}

TEST(ConvOps, Float32MatchesFloat64) {
  ConvCase c{.label = "", .x = {4, 8, 10, 10}, .w = {16, 8, 3, 3}, .strides = {1, 1}, .paddings = {1, 1}};
  Tensor x = RandomTensor(c.x, -1, 1, 3), w = RandomTensor(c.w, -1, 1, 4);
  Tensor x32 = RandomTensor(c.x, -1, 1, 3, DType::kFloat32), w32 = RandomTensor(c.w, -1, 1, 4, DType::kFloat32);
  auto d = Values(RunOp(Conv("conv2d", c), {{"x", x}, {"w", w}}).at("out"));
  auto f = Values(RunOp(Conv("conv2d", c), {{"x", x32}, {"w", w32}}).at("out"));
  ASSERT_EQ(d.size(), f.size());
  for (size_t i = 0; i < d.size(); ++i) ASSERT_NEAR(d[i], f[i], 1e-4) << i;
}

TEST(ConvOps, TransposeIsTheAdjointOfConv) {
  // <conv(x), y> == <x, conv_transpose(y)> with the same filter.
  ConvCase c{.label = "", .x = {2, 3, 7, 7}, .w = {4, 3, 3, 3}, .strides = {2, 2}, .paddings = {1, 1}};
  Tensor x = RandomTensor(c.x, -1, 1, 1), w = RandomTensor(c.w, -1, 1, 2);
  auto cx = Values(RunOp(Conv("conv2d", c), {{"x", x}, {"w", w}}).at("out"));
  Tensor y = RandomTensor({2, 4, 4, 4}, -1, 1, 3);
  OpDesc t = Conv("conv2d_transpose", c).Set("output_size", std::vector<int32_t>{7, 7});
  auto ty = Values(RunOp(t, {{"x", y}, {"w", w}}).at("out"));
  auto xv = Values(x), yv = Values(y);
  double a = 0, b = 0;
  for (size_t i = 0; i < cx.size(); ++i) a += cx[i] * yv[i];
  for (size_t i = 0; i < ty.size(); ++i) b += ty[i] * xv[i];
  EXPECT_NEAR(a, b, 1e-9);
}

TEST(ConvOps, ChannelMismatchNamesOpInputAndExpectedShape) {
  ConvCase c{.label = "", .x = {-1, 4, 8, 8}, .w = {8, 3, 3, 3}};
  ExpectErrorMentions<InvalidArgument>(
      [&] { InferredDims(Conv("conv2d", c), {{"x", c.x}, {"w", c.w}}, "out"); },
      {"conv2d", "Input ('x') of shape [-1, 4, 8, 8]", "expected Input of shape [N, 3, H, W]"});
}

TEST(ConvOps, RankAndWindowErrorsNameTheInput) {
  ConvCase c{.label = "", .x = {-1, 3, 8}, .w = {8, 3, 3, 3}};
  ExpectErrorMentions<InvalidArgument>(
      [&] { InferredDims(Conv("conv2d", c), {{"x", c.x}, {"w", c.w}}, "out"); },
      {"conv2d", "Input ('x') of shape [-1, 3, 8]", "[N, C, H, W]"});
  ConvCase small{.label = "", .x = {1, 3, 2, 2}, .w = {8, 3, 5, 5}};
  ExpectErrorMentions<InvalidArgument>(
      [&] { InferredDims(Conv("conv2d", small), {{"x", small.x}, {"w", small.w}}, "out"); },
      {"conv2d", "smaller than the window"});
}

}  // namespace flotilla::testing
