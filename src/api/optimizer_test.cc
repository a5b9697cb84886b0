#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "flotilla/api/initializer.h"
#include "flotilla/api/layers.h"
#include "flotilla/api/learning_rate_scheduler.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla {
namespace {

// Fits y = 2·x0 − 3·x1 + 1 with each optimizer; the loss must fall by 100×.
void ExpectFits(optimizer::Optimizer& opt, int steps) {
  RegisterAllOps();
  UniqueNameGuard names;
  Program main, startup;
  ProgramGuard guard(main, startup);
  auto x = layers::data("x", {2});
  auto y = layers::data("y", {1});
  auto pred = layers::fc(x, 1);
  auto loss = layers::mean(layers::square_error_cost(pred, y));
  auto result = opt.minimize(loss);
  ASSERT_EQ(result.params_grads.size(), 2u);
  ASSERT_EQ(result.optimize_ops.size(), 2u);
  EXPECT_EQ(result.optimize_ops[0]->type, opt.type());
  EXPECT_EQ(result.optimize_ops[0]->Role(), kOpRoleOptimize);

  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> xs(64 * 2), ys(64);
  for (int i = 0; i < 64; ++i) {
    xs[2 * i] = u(rng);
    xs[2 * i + 1] = u(rng);
    ys[i] = 2 * xs[2 * i] - 3 * xs[2 * i + 1] + 1;
  }
  FeedMap feed{{"x", Tensor::FromVector(xs, {64, 2})}, {"y", Tensor::FromVector(ys, {64, 1})}};
  Executor exe;
  Scope scope;
  exe.Run(startup, {}, {}, &scope);
  float first = exe.Run(main, feed, {loss.name()}, &scope)[0].data<float>()[0];
  float last = first;
  for (int i = 0; i < steps; ++i) last = exe.Run(main, feed, {loss.name()}, &scope)[0].data<float>()[0];
  EXPECT_LT(last, first / 100) << opt.type() << ": loss " << first << " -> " << last;
}

// One SGD step on w (fc weight, multiplier `m` from its ParamAttr) with a
// constant or a scheduled rate: w moves by m times the plain step.
std::vector<float> StepWithMultiplier(float m, bool scheduled) {
  RegisterAllOps();
  UniqueNameGuard names;
  Program main, startup;
  ProgramGuard guard(main, startup);
  auto x = layers::data("x", {2});
  ParamAttr w_attr = ParamAttr::Named("w", std::make_shared<initializer::Constant>(0.5));
  w_attr.learning_rate = m;
  auto loss = layers::mean(layers::fc(x, 1, 1, w_attr, ParamAttr::None()));
  std::unique_ptr<optimizer::SGD> opt = scheduled
      ? std::make_unique<optimizer::SGD>(layers::exponential_decay(0.1f, 1000, 0.5f))
      : std::make_unique<optimizer::SGD>(0.1f);
  opt->minimize(loss);
  Executor exe;
  Scope scope;
  exe.Run(startup, {}, {}, &scope);
  exe.Run(main, {{"x", Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2})}}, {}, &scope);
  return scope.FindVar("w")->GetTensor().ToVector<float>();
}

TEST(Optimizer, ParamAttrLearningRateScalesTheStep) {
  for (bool scheduled : {false, true}) {
    const std::vector<float> plain = StepWithMultiplier(1.0f, scheduled);
    const std::vector<float> scaled = StepWithMultiplier(0.25f, scheduled);
    ASSERT_EQ(plain.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_GT(0.5f - plain[i], 0.0f);
      EXPECT_NEAR(0.5f - scaled[i], 0.25f * (0.5f - plain[i]), 1e-6) << "scheduled " << scheduled;
    }
  }
}

TEST(Optimizer, SGDFits) {
  optimizer::SGD opt(0.1f);
  ExpectFits(opt, 300);
}

TEST(Optimizer, MomentumFits) {
  optimizer::Momentum opt(0.05f, 0.9f);
  ExpectFits(opt, 300);
}

TEST(Optimizer, AdamFits) {
  optimizer::Adam opt(0.05f);
  ExpectFits(opt, 400);
}

TEST(Optimizer, AdagradFits) {
  optimizer::Adagrad opt(0.5f);
  ExpectFits(opt, 400);
}

}  // namespace
}  // namespace flotilla
