#include "flotilla/api/nn_functional.h"

#include <gtest/gtest.h>

#include <cmath>

#include "flotilla/api/layers.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla {
namespace {

class NnFunctionalTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterAllOps(); }
  Program main, startup;
  UniqueNameGuard names;
};

float MaxAbsDiff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.dims(), b.dims());
  float m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::abs(a.data<float>()[i] - b.data<float>()[i]));
  return m;
}

// functional::conv2d over the parameters a conv2d layer made computes what
// the layer computes, and creates no parameter of its own.
TEST_F(NnFunctionalTest, Conv2dOverALayersParametersEqualsTheLayer) {
  ProgramGuard guard(main, startup);
  auto x = layers::data("x", {3, 9, 9});
  auto layer = layers::conv2d(x, 6, 3, 2, {1, 0, 2, 1}, 1, 3, ParamAttr::Named("w"), ParamAttr::Named("b"));
  const size_t vars = main.global_block().var_names().size();
  auto f = functional::conv2d(x, main.global_block().GetVariable("w"), main.global_block().GetVariable("b"), 2,
                              {1, 0, 2, 1}, 1, 3);
  EXPECT_EQ(f.shape(), layer.shape());
  for (const std::string& n : main.global_block().var_names()) {
    EXPECT_TRUE(!main.global_block().Var(n).is_parameter || n == "w" || n == "b") << n;
  }
  EXPECT_GT(main.global_block().var_names().size(), vars);
  Executor exe;
  Scope scope;
  exe.Run(startup, {}, {}, &scope);
  std::vector<float> img(2 * 3 * 81);
  for (size_t i = 0; i < img.size(); ++i) img[i] = float((i * 37) % 19) / 9.0f - 1.0f;
  auto out = exe.Run(main, {{"x", Tensor::FromVector(img, {2, 3, 9, 9})}}, {layer.name(), f.name()}, &scope);
  EXPECT_EQ(MaxAbsDiff(out[0], out[1]), 0.0f);
}

// functional::linear over fc's parameters is fc; functional::embedding keeps
// the ids' shape and looks up the same rows as layers::embedding.
TEST_F(NnFunctionalTest, LinearEqualsFcAndEmbeddingKeepsTheIdsShape) {
  ProgramGuard guard(main, startup);
  auto x = layers::data("x", {2, 3});
  auto fc = layers::fc(x, 4, 2, ParamAttr::Named("w"), ParamAttr::Named("b"));
  auto lin = functional::linear(x, main.global_block().GetVariable("w"), main.global_block().GetVariable("b"));
  auto no_bias = functional::linear(x, main.global_block().GetVariable("w"));
  EXPECT_EQ(lin.shape(), (Dims{-1, 2, 4}));
  auto ids = layers::data("ids", {2}, DType::kInt64);
  auto table = layers::create_parameter({7, 3}, DType::kFloat32, ParamAttr::Named("t"));
  auto emb = functional::embedding(ids, table, 6);
  EXPECT_EQ(emb.shape(), (Dims{-1, 2, 3}));
  EXPECT_THROW(functional::linear(x, table), InvalidArgument);
  EXPECT_THROW(functional::embedding(x, table), InvalidArgument);
  EXPECT_THROW(functional::embedding(ids, table, 7), InvalidArgument);
  Executor exe;
  Scope scope;
  exe.Run(startup, {}, {}, &scope);
  std::vector<float> xs(2 * 2 * 3);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = float(i) * 0.25f - 1.0f;
  auto out = exe.Run(main, {{"x", Tensor::FromVector(xs, {2, 2, 3})},
                            {"ids", Tensor::FromVector<int64_t>({1, 6, 6, 0}, {2, 2})}},
                     {fc.name(), lin.name(), no_bias.name(), emb.name()}, &scope);
  EXPECT_EQ(MaxAbsDiff(out[0], out[1]), 0.0f);
  EXPECT_EQ(MaxAbsDiff(out[1], out[2]), 0.0f);  // b starts at 0
  const Tensor& t = scope.FindVar("t")->GetTensor();
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(out[3].data<float>()[k], t.data<float>()[3 + k]);  // row 1
    EXPECT_EQ(out[3].data<float>()[3 + k], 0.0f);               // padding row 6
  }
}

TEST_F(NnFunctionalTest, ShapesAndErrors) {
  ProgramGuard guard(main, startup);
  auto x = layers::data("x", {4, 5, 5});
  auto w = layers::create_parameter({4, 2, 3, 3}, DType::kFloat32, ParamAttr::Named("wt"));
  EXPECT_EQ(functional::conv2d_transpose(x, w, {}, 2, 1, 1).shape(), (Dims{-1, 2, 10, 10}));
  EXPECT_EQ(functional::conv2d_transpose(x, w, {}, 2, 1, 0, 1, 1, {9, 9}).shape(), (Dims{-1, 2, 9, 9}));
  EXPECT_THROW(functional::conv2d(x, layers::data("flat", {4})), InvalidArgument);
  EXPECT_EQ(functional::layer_norm(x, {5, 5}).shape(), x.shape());
  EXPECT_THROW(functional::layer_norm(x, {4, 4}), InvalidArgument);
  auto ids = layers::data("ids", {1}, DType::kInt64);
  EXPECT_EQ(functional::one_hot(ids, 7).shape(), (Dims{-1, 1, 7}));
  EXPECT_EQ(layers::one_hot(ids, 7).shape(), (Dims{-1, 7}));
  auto flat_ids = layers::data("flat_ids", {-1}, DType::kInt64, false);
  EXPECT_EQ(functional::one_hot(flat_ids, 7).shape(), (Dims{-1, 7}));
}

// Paddle's conv2d_transpose without filter_size derives it from output_size.
TEST_F(NnFunctionalTest, Conv2dTransposeFilterFromOutputSize) {
  ProgramGuard guard(main, startup);
  auto x = layers::data("x", {3, 7, 7});
  auto y = layers::conv2d_transpose(x, 5, 0, {16, 15}, 2, 1, 1, 1, ParamAttr::Named("tw"));
  EXPECT_EQ(y.shape(), (Dims{-1, 5, 16, 15}));
  EXPECT_EQ(main.global_block().Var("tw").shape, (Dims{3, 5, 6, 5}));  // (16 - 6 * 2 + 2 - 1) + 1
  EXPECT_THROW(layers::conv2d_transpose(x, 5, 0), InvalidArgument);
}

// functional::batch_norm in training updates the running statistics it is
// given; in evaluation it normalises by them.
TEST_F(NnFunctionalTest, BatchNormTrainingUpdatesRunningStatistics) {
  ProgramGuard guard(main, startup);
  auto x = layers::data("x", {2, 1, 2});
  auto mean = layers::create_global_var({2}, 0.0, DType::kFloat32, true, "rm");
  auto var = layers::create_global_var({2}, 1.0, DType::kFloat32, true, "rv");
  auto scale = layers::create_global_var({2}, 1.0, DType::kFloat32, true, "g");
  auto shift = layers::create_global_var({2}, 0.0, DType::kFloat32, true, "beta");
  auto train = functional::batch_norm(x, mean, var, scale, shift, /*training=*/true, 0.5f);
  auto eval = functional::batch_norm(x, mean, var, scale, shift);
  Executor exe;
  Scope scope;
  exe.Run(startup, {}, {}, &scope);
  // channel 0: values 1, 3 (mean 2); channel 1: 10, 14 (mean 12).
  auto out = exe.Run(main, {{"x", Tensor::FromVector<float>({1, 3, 10, 14}, {1, 2, 1, 2})}},
                     {train.name(), eval.name(), "rm", "rv"}, &scope);
  EXPECT_NEAR(out[0].data<float>()[0], -1.0f, 1e-3);
  EXPECT_NEAR(out[2].data<float>()[0], 1.0f, 1e-6);  // 0.5 * 0 + 0.5 * 2
  EXPECT_NEAR(out[2].data<float>()[1], 6.0f, 1e-6);  // 0.5 * 0 + 0.5 * 12
  const float rv1 = out[3].data<float>()[1];
  EXPECT_GT(rv1, 1.0f);
  // Evaluation ran after the update: (14 - 6) / sqrt(rv + eps).
  EXPECT_NEAR(out[1].data<float>()[3], 8.0f / std::sqrt(rv1 + 1e-5f), 1e-4);
}

}  // namespace
}  // namespace flotilla
