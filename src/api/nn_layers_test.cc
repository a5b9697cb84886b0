#include <gtest/gtest.h>

#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla {
namespace {

class NnLayersTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterAllOps(); }
  Program main, startup;
  UniqueNameGuard names;
};

TEST_F(NnLayersTest, ConvBatchNormPoolShapesAndParameters) {
  ProgramGuard guard(main, startup);
  auto x = layers::data("x", {3, 32, 32});
  auto c = layers::conv2d(x, 16, 7, 2, 3, 1, 1, ParamAttr::Named("conv1_weights"), ParamAttr::None());
  EXPECT_EQ(c.shape(), (Dims{-1, 16, 16, 16}));
  auto b = layers::batch_norm(c, {.act = "relu", .param_attr = ParamAttr::Named("bn_conv1_scale"),
                                  .bias_attr = ParamAttr::Named("bn_conv1_offset"),
                                  .moving_mean_name = "bn_conv1_mean",
                                  .moving_variance_name = "bn_conv1_variance"});
  auto p = layers::pool2d(b, 3, "max", 2, 1);
  EXPECT_EQ(p.shape(), (Dims{-1, 16, 8, 8}));
  auto same = layers::conv2d(p, 8, 3, 2, "SAME");
  EXPECT_EQ(same.shape(), (Dims{-1, 8, 4, 4}));
  auto g = layers::pool2d(same, 1, "avg", 1, 0, /*global_pooling=*/true);
  EXPECT_EQ(g.shape(), (Dims{-1, 8, 1, 1}));
  EXPECT_EQ(layers::flatten(g).shape(), (Dims{-1, 8}));
  Block& m = main.global_block();
  EXPECT_EQ(m.Var("conv1_weights").shape, (Dims{16, 3, 7, 7}));
  EXPECT_FALSE(m.Var("bn_conv1_mean").stop_gradient == false);
  EXPECT_TRUE(m.Var("bn_conv1_variance").persistable);
  EXPECT_TRUE(m.Var("bn_conv1_scale").is_parameter && !m.Var("bn_conv1_scale").stop_gradient);
  bool fused = false;
  for (const auto& op : m.ops()) fused = fused || (op->type == "batch_norm" && op->Attr<bool>("fuse_with_relu"));
  EXPECT_TRUE(fused);
}

TEST_F(NnLayersTest, DepthwiseConvUsesTheDepthwiseOp) {
  ProgramGuard guard(main, startup);
  auto x = layers::data("x", {8, 10, 10});
  layers::conv2d(x, 8, 3, 1, 1, 1, /*groups=*/8);
  EXPECT_EQ(main.global_block().ops().back()->type, "elementwise_add");
  EXPECT_EQ(main.global_block().op(0).type, "depthwise_conv2d");
}

TEST_F(NnLayersTest, ShapeErrorsNameLayerAndInput) {
  ProgramGuard guard(main, startup);
  auto x = layers::data("x", {13});
  EXPECT_THROW(layers::conv2d(x, 4, 3), InvalidArgument);
  auto img = layers::data("img", {3, 8, 8});
  EXPECT_THROW(layers::conv2d(img, 4, 3, 1, 0, 1, 2), InvalidArgument);  // 3 channels, 2 groups
}

// A tiny CNN on two fixed images learns to tell them apart; is_test in a
// for_test clone uses the moving statistics the training run updated.
TEST_F(NnLayersTest, SmallCnnTrainsAndEvaluates) {
  ProgramGuard guard(main, startup);
  auto x = layers::data("x", {1, 6, 6});
  auto y = layers::data("y", {1}, DType::kInt64);
  auto c = layers::conv2d(x, 4, 3, 1, 1);
  auto b = layers::batch_norm(c, "relu");
  auto d = layers::dropout(b, 0.1f, false, 0, "upscale_in_train");
  auto p = layers::pool2d(d, 2, "avg", 2);
  auto logits = layers::fc(p, 2);
  auto loss = layers::mean(layers::softmax_with_cross_entropy(logits, y));
  Program test = main.Clone(/*for_test=*/true);
  optimizer::Momentum opt(0.1f, 0.9f);
  opt.minimize(loss);
  std::vector<float> img(72, 0.0f);
  for (int i = 0; i < 36; ++i) img[i] = (i % 6) < 3 ? 1.0f : -1.0f;
  for (int i = 36; i < 72; ++i) img[i] = ((i - 36) / 6) < 3 ? 1.0f : -1.0f;
  FeedMap feed{{"x", Tensor::FromVector(img, {2, 1, 6, 6})},
               {"y", Tensor::FromVector<int64_t>({0, 1}, {2, 1})}};
  Executor exe;
  Scope scope;
  exe.Run(startup, {}, {}, &scope);
  float first = 0, last = 0;
  for (int i = 0; i < 60; ++i) {
    last = exe.Run(main, feed, {loss.name()}, &scope)[0].data<float>()[0];
    if (i == 0) first = last;
  }
  EXPECT_LT(last, first * 0.2f) << "first " << first << " last " << last;
  float eval = exe.Run(test, feed, {loss.name()}, &scope)[0].data<float>()[0];
  EXPECT_LT(eval, 0.5f);
}

}  // namespace
}  // namespace flotilla
