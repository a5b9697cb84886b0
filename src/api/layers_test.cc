#include <gtest/gtest.h>

#include <cmath>

#include "flotilla/api/layers.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla {
namespace {

class LayersTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterAllOps(); }
  Program main, startup;
  UniqueNameGuard names;
};

TEST_F(LayersTest, DataPrependsTheBatchDimension) {
  ProgramGuard guard(main, startup);
  auto x = layers::data("x", {13});
  EXPECT_EQ(x.shape(), (Dims{-1, 13}));
  EXPECT_TRUE(x.stop_gradient());
  auto y = layers::data("y", {-1, 1}, DType::kInt64);
  EXPECT_EQ(y.shape(), (Dims{-1, 1}));
  EXPECT_THROW(layers::data("x", {2}), InvalidArgument);
}

TEST_F(LayersTest, FcCreatesParametersAndInitialisers) {
  ProgramGuard guard(main, startup);
  auto x = layers::data("x", {13});
  auto out = layers::fc(x, 4, 1, {}, {}, "relu");
  EXPECT_EQ(out.shape(), (Dims{-1, 4}));
  Block& m = main.global_block();
  ASSERT_TRUE(m.HasVar("fc_0.w_0"));
  EXPECT_EQ(m.Var("fc_0.w_0").shape, (Dims{13, 4}));
  EXPECT_TRUE(m.Var("fc_0.w_0").is_parameter);
  EXPECT_EQ(m.Var("fc_0.b_0").shape, (Dims{4}));
  EXPECT_EQ(startup.global_block().op_size(), 2u);  // uniform (Xavier) + fill_constant
  EXPECT_EQ(startup.global_block().op(0).type, "uniform_random");
  EXPECT_EQ(m.op_size(), 3u);  // mul, elementwise_add, relu

  Executor exe;
  Scope scope;
  exe.Run(startup, {}, {}, &scope);
  auto w = scope.GetVar("fc_0.w_0").GetTensor();
  float limit = std::sqrt(6.0f / 17.0f);
  for (float v : w.ToVector<float>()) {
    EXPECT_LE(std::abs(v), limit);
  }
  auto b = scope.GetVar("fc_0.b_0").GetTensor();
  EXPECT_EQ(b.ToVector<float>(), std::vector<float>(4, 0.0f));
  auto feed = Tensor::FromVector<float>(std::vector<float>(26, 1.0f), {2, 13});
  auto y = exe.Run(main, {{"x", feed}}, {out.name()}, &scope);
  EXPECT_EQ(y[0].dims(), (Dims{2, 4}));
}

TEST_F(LayersTest, FcWithoutBiasAndBadArguments) {
  ProgramGuard guard(main, startup);
  auto x = layers::data("x", {3});
  auto out = layers::fc(x, 2, 1, ParamAttr::Named("my_w"), ParamAttr::None());
  EXPECT_TRUE(main.global_block().HasVar("my_w"));
  EXPECT_EQ(main.global_block().op_size(), 1u);
  EXPECT_THROW(layers::fc(x, 2, 1, {}, {}, "swish"), InvalidArgument);
  EXPECT_THROW(layers::fc(x, 0), InvalidArgument);
}

TEST_F(LayersTest, EmbeddingNeedsInt64Ids) {
  ProgramGuard guard(main, startup);
  auto ids = layers::data("ids", {1}, DType::kInt64);
  auto emb = layers::embedding(ids, {100, 8}, true);
  EXPECT_EQ(main.global_block().Var("embedding_0.w_0").shape, (Dims{100, 8}));
  auto f = layers::data("f", {1});
  EXPECT_THROW(layers::embedding(f, {100, 8}), InvalidArgument);
}

}  // namespace
}  // namespace flotilla

namespace flotilla {
namespace {

// Two processes building the same program with the same random_seed get the
// same initial parameters; a different seed gives different ones.
std::vector<float> InitialWeights(uint64_t seed) {
  RegisterAllOps();
  UniqueNameGuard names;
  Program main, startup;
  startup.set_random_seed(seed);
  ProgramGuard guard(main, startup);
  auto x = layers::data("x", {8});
  layers::fc(x, 4);
  Executor exe;
  Scope scope;
  exe.Run(startup, {}, {}, &scope);
  return scope.GetVar("fc_0.w_0").GetTensor().ToVector<float>();
}

TEST(Initializers, ProgramRandomSeedMakesInitialisationReproducible) {
  EXPECT_EQ(InitialWeights(7), InitialWeights(7));
  EXPECT_NE(InitialWeights(7), InitialWeights(8));
}

}  // namespace
}  // namespace flotilla
