#include "flotilla/models/resnet.h"

#include <gtest/gtest.h>

#include "flotilla/api/layers.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla::models {
namespace {

int64_t TrainableParameters(const Program& p) {
  int64_t n = 0;
  for (const VarDesc* v : p.global_block().AllVars()) {
    if (v->is_parameter && !v->stop_gradient) n += Numel(v->shape);
  }
  return n;
}

class ResNetTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterAllOps(); }
  Program main, startup;
  UniqueNameGuard names;
};

TEST_F(ResNetTest, ParameterCountsMatchTheReferenceNetworks) {
  // torchvision's resnet50 has 25,557,032; Paddle's ResNet-18/34 add a 1x1
  // projection (conv + bn) to the first block: 64*64 + 2*64 more.
  const std::map<int, int64_t> expected = {{18, 11689512 + 4096 + 128}, {34, 21797672 + 4096 + 128},
                                           {50, 25557032}, {101, 44549160}, {152, 60192808}};
  for (const auto& [depth, count] : expected) {
    Program m, s;
    ProgramGuard guard(m, s);
    UniqueNameGuard fresh;
    ResNet(layers::data("image", {3, 224, 224}), depth, 1000);
    EXPECT_EQ(TrainableParameters(m), count) << "ResNet-" << depth;
  }
}

TEST_F(ResNetTest, PaddleParameterNames) {
  ProgramGuard guard(main, startup);
  ResNet(layers::data("image", {3, 224, 224}), 101, 1000);
  const Block& b = main.global_block();
  for (const char* name : {"conv1_weights", "bn_conv1_scale", "bn_conv1_offset", "bn_conv1_mean",
                           "bn_conv1_variance", "res2a_branch1_weights", "res2c_branch2c_weights",
                           "bn2c_branch2c_scale", "res4b22_branch2b_weights", "bn4b22_branch2b_variance",
                           "res5c_branch2c_weights", "fc_0.w_0", "fc_0.b_0"}) {
    EXPECT_TRUE(b.HasVar(name)) << name;
  }
  EXPECT_EQ(b.Var("res4b22_branch2b_weights").shape, (Dims{256, 256, 3, 3}));
  EXPECT_EQ(b.Var("fc_0.w_0").shape, (Dims{2048, 1000}));
}

TEST_F(ResNetTest, ResNet18RunsOnSmallImages) {
  ProgramGuard guard(main, startup);
  auto image = layers::data("image", {3, 32, 32});
  auto logits = ResNet(image, 18, 10);
  EXPECT_EQ(logits.shape(), (Dims{-1, 10}));
  Executor exe;
  Scope scope;
  exe.Run(startup, {}, {}, &scope);
  std::vector<float> x(2 * 3 * 32 * 32, 0.5f);
  auto out = exe.Run(main, {{"image", Tensor::FromVector(x, {2, 3, 32, 32})}}, {logits.name()}, &scope);
  EXPECT_EQ(out[0].dims(), (Dims{2, 10}));
}

TEST_F(ResNetTest, DepthFromModelName) {
  EXPECT_EQ(ResNetDepth("ResNet50"), 50);
  EXPECT_EQ(ResNetDepth("resnet18"), 18);
  EXPECT_THROW(ResNetDepth("VGG16"), InvalidArgument);
  ProgramGuard guard(main, startup);
  EXPECT_THROW(ResNet(layers::data("image", {3, 32, 32}), 20, 10), InvalidArgument);
}

TEST_F(ResNetTest, LeNetShapes) {
  ProgramGuard guard(main, startup);
  EXPECT_EQ(LeNet(layers::data("image", {1, 28, 28}), 10).shape(), (Dims{-1, 10}));
}

}  // namespace
}  // namespace flotilla::models
