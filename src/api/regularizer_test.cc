// Weight decay checked against hand-written updates: a program trained with a
// regularized optimizer must match one whose gradients are decayed in plain
// C++ arithmetic, step by step.
#include "flotilla/api/regularizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>

#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr float kLr = 0.1f;
constexpr int kSteps = 15;

// y ≈ x·w + b over a fixed batch; "w" [3,1] and "b" [1] start from seeded
// uniform values (b away from 0, so sign(b) matters).
struct Regression {
  Program main, startup;
  Variable loss;
  FeedMap feed;

  Regression(const ParamAttr& w_attr = {}, const ParamAttr& b_attr = {}) {
    RegisterAllOps();
    UniqueNameGuard names;
    ProgramGuard guard(main, startup);
    ParamAttr w = w_attr, b = b_attr;
    w.name = "w";
    b.name = "b";
    w.initializer = std::make_shared<initializer::Uniform>(-1.0, 1.0, 11);
    b.initializer = std::make_shared<initializer::Uniform>(0.5, 1.0, 12);
    auto x = layers::data("x", {3});
    auto y = layers::data("y", {1});
    loss = layers::mean(layers::square_error_cost(layers::fc(x, 1, 1, w, b), y));
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> xs(8 * 3), ys(8);
    for (auto& v : xs) v = u(rng);
    for (auto& v : ys) v = u(rng);
    feed = {{"x", Tensor::FromVector(xs, {8, 3})}, {"y", Tensor::FromVector(ys, {8, 1})}};
  }
};

std::vector<float> Values(Scope& scope, const std::string& name) {
  return scope.GetVar(name).GetTensor().ToVector<float>();
}

using Params = std::map<std::string, std::vector<float>>;

// Trains `opt` on a Regression for kSteps and returns w and b.
Params TrainWith(optimizer::Optimizer& opt, const ParamAttr& w_attr = {},
                 const ParamAttr& b_attr = {}) {
  RegisterAllOps();
  Regression m(w_attr, b_attr);
  {
    ProgramGuard guard(m.main, m.startup);
    opt.minimize(m.loss);
  }
  Executor exe;
  Scope scope;
  exe.Run(m.startup, {}, {}, &scope);
  for (int i = 0; i < kSteps; ++i) exe.Run(m.main, m.feed, {}, &scope);
  return {{"w", Values(scope, "w")}, {"b", Values(scope, "b")}};
}

// p ← update(name, p, g) on the unregularized gradients of a program with
// backward only.
using Update = std::function<void(const std::string&, std::vector<float>&, const std::vector<float>&)>;

Params TrainByHand(const Update& update) {
  RegisterAllOps();
  Regression m;
  {
    ProgramGuard guard(m.main, m.startup);
    AppendBackward(m.loss);
  }
  Executor exe;
  Scope scope;
  exe.Run(m.startup, {}, {}, &scope);
  for (int i = 0; i < kSteps; ++i) {
    auto grads = exe.Run(m.main, m.feed, {GradVarName("w"), GradVarName("b")}, &scope);
    for (int k = 0; k < 2; ++k) {
      std::string name = k == 0 ? "w" : "b";
      std::vector<float> p = Values(scope, name);
      update(name, p, grads[k].ToVector<float>());
      Tensor* t = scope.GetVar(name).GetMutableTensor();
      std::copy(p.begin(), p.end(), t->mutable_data<float>());
    }
  }
  return {{"w", Values(scope, "w")}, {"b", Values(scope, "b")}};
}

float Sign(float v) { return float((v > 0) - (v < 0)); }

// Plain SGD on g + decay(p), the decay chosen per parameter.
Update SgdWithDecay(std::map<std::string, std::function<float(float)>> decay) {
  return [decay](const std::string& name, std::vector<float>& p, const std::vector<float>& g) {
    for (size_t i = 0; i < p.size(); ++i) p[i] -= kLr * (g[i] + decay.at(name)(p[i]));
  };
}

void ExpectNear(const Params& got, const Params& want) {
  for (const auto& [name, values] : want) {
    ASSERT_EQ(got.at(name).size(), values.size()) << name;
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_NEAR(got.at(name)[i], values[i], 1e-6) << name << "[" << i << "]";
    }
  }
}

void ExpectDiffers(const Params& a, const Params& b) {
  float diff = 0;
  for (const auto& [name, values] : a) {
    for (size_t i = 0; i < values.size(); ++i) diff = std::max(diff, std::abs(values[i] - b.at(name)[i]));
  }
  EXPECT_GT(diff, 1e-3) << "the decay must change the trained parameters";
}

TEST(Regularizer, L2DecayMatchesHandWrittenUpdate) {
  const float c = 0.05f;
  optimizer::SGD opt(kLr, regularizer::L2Decay(c));
  auto l2 = [c](float p) { return c * p; };
  Params got = TrainWith(opt);
  ExpectNear(got, TrainByHand(SgdWithDecay({{"w", l2}, {"b", l2}})));
  auto none = [](float) { return 0.0f; };
  ExpectDiffers(got, TrainByHand(SgdWithDecay({{"w", none}, {"b", none}})));
}

TEST(Regularizer, L1DecayMatchesHandWrittenUpdate) {
  const float c = 0.05f;
  optimizer::SGD opt(kLr);
  opt.set_regularization(regularizer::L1Decay(c));
  auto l1 = [c](float p) { return c * Sign(p); };
  Params got = TrainWith(opt);
  ExpectNear(got, TrainByHand(SgdWithDecay({{"w", l1}, {"b", l1}})));
  auto none = [](float) { return 0.0f; };
  ExpectDiffers(got, TrainByHand(SgdWithDecay({{"w", none}, {"b", none}})));
}

TEST(Regularizer, ParamAttrRegularizerOverridesOptimizers) {
  const float c1 = 0.2f, c2 = 0.05f;
  ParamAttr w_attr;
  w_attr.regularizer = regularizer::L1Decay(c1);
  optimizer::SGD opt(kLr, regularizer::L2Decay(c2));
  Params got = TrainWith(opt, w_attr);
  Params want = TrainByHand(SgdWithDecay({{"w", [c1](float p) { return c1 * Sign(p); }},
                                          {"b", [c2](float p) { return c2 * p; }}}));
  ExpectNear(got, want);
}

TEST(Regularizer, MomentumReadsRegularizedGradient) {
  const float c = 0.05f, mu = 0.9f;
  optimizer::Momentum opt(kLr, mu, false, regularizer::L2Decay(c));
  std::map<std::string, std::vector<float>> velocity{{"w", {0, 0, 0}}, {"b", {0}}};
  Params want = TrainByHand([&](const std::string& name, std::vector<float>& p,
                                const std::vector<float>& g) {
    auto& v = velocity.at(name);
    for (size_t i = 0; i < p.size(); ++i) {
      v[i] = mu * v[i] + (g[i] + c * p[i]);
      p[i] -= kLr * v[i];
    }
  });
  ExpectNear(TrainWith(opt), want);
}

// The ops apply_gradients appended for `opt`, by type, after backward.
std::vector<const OpDesc*> UpdateOps(const Program& main, const std::string& type) {
  std::vector<const OpDesc*> ops;
  for (const auto& op : main.global_block().ops()) {
    if (op->type == type) ops.push_back(op.get());
  }
  return ops;
}

TEST(Regularizer, UpdateOpsReadRegularizedGradientAndDecayHasBackwardRole) {
  RegisterAllOps();
  ParamAttr w_attr;
  w_attr.regularizer = regularizer::L1Decay(0.1f);
  Regression m(w_attr);
  optimizer::Adam opt(0.01f, 0.9f, 0.999f, 1e-8f, regularizer::L2Decay(0.01f));
  {
    ProgramGuard guard(m.main, m.startup);
    opt.minimize(m.loss);
  }
  auto adams = UpdateOps(m.main, "adam");
  ASSERT_EQ(adams.size(), 2u);
  for (const OpDesc* op : adams) {
    std::string param = op->Input("Param");
    std::string regularized = GradVarName(param) + regularizer::kRegularizedSuffix;
    EXPECT_EQ(op->Input("Grad"), regularized);
    EXPECT_THAT(op->Attr<std::vector<std::string>>(kOpRoleVarAttr), ElementsAre(param, regularized));
    EXPECT_TRUE(m.main.global_block().HasVar(regularized));
  }
  std::map<std::string, int> decay_ops;
  for (const auto& op : m.main.global_block().ops()) {
    auto outs = op->OutputArgumentNames();
    bool decay = outs.size() == 1 && (outs[0].find("@DECAY") != std::string::npos ||
                                      outs[0].find(regularizer::kRegularizedSuffix) != std::string::npos);
    if (!decay) continue;
    ++decay_ops[op->type];
    EXPECT_EQ(op->Role(), kOpRoleBackward) << op->DebugString();
  }
  // w: sign, scale, sum (L1); b: scale, sum (L2).
  EXPECT_EQ(decay_ops, (std::map<std::string, int>{{"scale", 2}, {"sign", 1}, {"sum", 2}}));
}

TEST(Regularizer, SparseGradientIsLeftUnregularized) {
  RegisterAllOps();
  UniqueNameGuard names;
  Program main, startup;
  ProgramGuard guard(main, startup);
  auto ids = layers::data("ids", {1}, DType::kInt64);
  auto emb = layers::embedding(ids, {10, 4}, /*is_sparse=*/true);
  auto loss = layers::mean(emb);
  optimizer::SGD opt(kLr, regularizer::L2Decay(0.1f));
  auto result = opt.minimize(loss);
  ASSERT_EQ(result.optimize_ops.size(), 1u);
  EXPECT_EQ(result.optimize_ops[0]->Input("Grad"), result.params_grads[0].second.name());
  EXPECT_EQ(UpdateOps(main, "sum").size(), 0u);
}

TEST(Regularizer, ParamRegularizerSurvivesClone) {
  ParamAttr w_attr;
  w_attr.regularizer = regularizer::L1Decay(0.25f);
  Regression m(w_attr);
  Program copy = m.main.Clone();
  auto reg = regularizer::ParamRegularizer(copy.global_block().Var("w"));
  ASSERT_NE(reg, nullptr);
  EXPECT_EQ(reg->type(), "l1_decay");
  EXPECT_FLOAT_EQ(reg->coeff(), 0.25f);
  EXPECT_EQ(regularizer::ParamRegularizer(copy.global_block().Var("b")), nullptr);
}

TEST(Regularizer, UnknownRecordedTypeNamesTheParameter) {
  VarDesc v;
  v.name = "fc_0.w_0";
  v.regularizer = "l3_decay";
  EXPECT_THAT([&] { regularizer::ParamRegularizer(v); },
              ThrowsMessage<InvalidArgument>(HasSubstr("parameter 'fc_0.w_0' has regularizer 'l3_decay'")));
}

}  // namespace
}  // namespace flotilla
