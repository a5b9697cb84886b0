#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "flotilla/ps/initializer.h"
#include "flotilla/ps/update_rule.h"

namespace flotilla::ps {
namespace {

struct Entry {
  std::vector<float> value, state;
};

Entry Fresh(const UpdateRule& rule, std::vector<float> value) {
  Entry e{value, std::vector<float>(rule.StateSize(value.size()))};
  rule.InitState(value.size(), e.state);
  return e;
}

TEST(UpdateRule, SgdHandComputed) {
  auto rule = MakeUpdateRule(UpdateRuleConfig::Sgd(0.1f));
  Entry e = Fresh(*rule, {1.0f, -2.0f});
  std::vector<float> g{0.5f, -1.0f};
  rule->Apply(e.value, e.state, g);
  EXPECT_FLOAT_EQ(e.value[0], 0.95f);
  EXPECT_FLOAT_EQ(e.value[1], -1.9f);
  EXPECT_EQ(rule->StateSize(2), 0);
}

// Paddle's momentum op, step by step in double precision.
struct MomentumRef {
  double lr, mu;
  bool nesterov;
  double p, v = 0;
  void Step(double g) {
    v = mu * v + g;
    p -= lr * (nesterov ? g + mu * v : v);
  }
};

TEST(UpdateRule, MomentumMatchesPaddlesOpPlainAndNesterov) {
  for (bool nesterov : {false, true}) {
    auto rule = MakeUpdateRule(UpdateRuleConfig::Momentum(0.1f, 0.9f, nesterov));
    EXPECT_EQ(rule->name(), nesterov ? "momentum_nesterov" : "momentum");
    EXPECT_EQ(rule->StateSize(3), 3);
    EXPECT_TRUE(rule->advances());
    Entry e = Fresh(*rule, {1.0f});
    MomentumRef ref{0.1, 0.9, nesterov, 1.0};
    for (double g : {0.5, -0.25, 1.0, 0.0, 0.3}) {
      std::vector<float> grad{float(g)};
      rule->Apply(e.value, e.state, grad);
      ref.Step(g);
      EXPECT_NEAR(e.value[0], ref.p, 1e-6) << "nesterov " << nesterov;
      EXPECT_NEAR(e.state[0], ref.v, 1e-6) << "nesterov " << nesterov;
    }
  }
}

// Advance(k) is k zero-gradient steps: what a sparse row missed while no
// gradient reached it.
TEST(UpdateRule, MomentumAdvanceEqualsZeroGradientSteps) {
  for (bool nesterov : {false, true}) {
    for (float mu : {0.9f, 1.0f}) {
      auto rule = MakeUpdateRule(UpdateRuleConfig::Momentum(0.05f, mu, nesterov));
      Entry e = Fresh(*rule, {2.0f, -1.0f});
      std::vector<float> g{0.7f, -0.4f};
      rule->Apply(e.value, e.state, g);  // a velocity to decay
      Entry stepped = e;
      std::vector<float> zero{0.0f, 0.0f};
      for (int k = 0; k < 7; ++k) rule->Apply(stepped.value, stepped.state, zero);
      const std::vector<float> lrs(7, 0.05f);
      rule->Advance(e.value.data(), e.state.data(), 2, lrs);
      for (int i = 0; i < 2; ++i) {
        EXPECT_NEAR(e.value[i], stepped.value[i], 1e-5) << "nesterov " << nesterov << " mu " << mu;
        EXPECT_NEAR(e.state[i], stepped.state[i], 1e-5) << "nesterov " << nesterov << " mu " << mu;
      }
    }
  }
  EXPECT_FALSE(MakeUpdateRule(UpdateRuleConfig::Adam(0.1f))->advances());
}

// Scheduled rates: each missed step moves the row at its own rate.
TEST(UpdateRule, MomentumAdvanceUsesEachMissedStepsRate) {
  auto rule = MakeUpdateRule(UpdateRuleConfig::Momentum(0.05f, 0.9f));
  Entry e = Fresh(*rule, {2.0f});
  std::vector<float> g{0.7f};
  rule->Apply(e.value, e.state, g, 0.3f);
  Entry stepped = e;
  const std::vector<float> lrs{0.3f, 0.2f, 0.1f, 0.05f};
  std::vector<float> zero{0.0f};
  for (float lr : lrs) rule->Apply(stepped.value, stepped.state, zero, lr);
  rule->Advance(e.value.data(), e.state.data(), 1, lrs);
  EXPECT_NEAR(e.value[0], stepped.value[0], 1e-6);
  EXPECT_NEAR(e.state[0], stepped.state[0], 1e-6);
}

TEST(UpdateRule, AdagradHandComputed) {
  auto rule = MakeUpdateRule(UpdateRuleConfig::Adagrad(0.1f, 1e-6f));
  Entry e = Fresh(*rule, {1.0f});
  std::vector<float> g{2.0f};
  rule->Apply(e.value, e.state, g);  // m = 4, p = 1 - 0.1*2/(2+1e-6)
  EXPECT_NEAR(e.value[0], 1.0 - 0.1 * 2.0 / (2.0 + 1e-6), 1e-6);
  rule->Apply(e.value, e.state, g);  // m = 8
  EXPECT_NEAR(e.value[0], 1.0 - 0.1 * 2.0 / (2.0 + 1e-6) - 0.1 * 2.0 / (std::sqrt(8.0) + 1e-6), 1e-6);
  EXPECT_FLOAT_EQ(e.state[0], 8.0f);
}

TEST(UpdateRule, AdamHandComputed) {
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  auto rule = MakeUpdateRule(UpdateRuleConfig::Adam(lr, b1, b2, eps));
  Entry e = Fresh(*rule, {0.5f, 0.5f});
  EXPECT_EQ(rule->StateSize(2), 6);
  double p = 0.5, m = 0, v = 0, b1p = 1, b2p = 1;
  for (double g : {0.3, -0.2, 0.1}) {
    std::vector<float> grad{float(g), float(g)};
    rule->Apply(e.value, e.state, grad);
    b1p *= b1;
    b2p *= b2;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    p -= lr * std::sqrt(1 - b2p) / (1 - b1p) * m / (std::sqrt(v) + eps);
    EXPECT_NEAR(e.value[0], p, 1e-6);
    EXPECT_NEAR(e.value[1], p, 1e-6);
  }
}

TEST(UpdateRule, GeoSumAddsDeltas) {
  auto rule = MakeUpdateRule(UpdateRuleConfig::GeoSum());
  Entry e = Fresh(*rule, {1.0f, 2.0f});
  std::vector<float> d{0.25f, -1.0f};
  rule->Apply(e.value, e.state, d);
  EXPECT_FLOAT_EQ(e.value[0], 1.25f);
  EXPECT_FLOAT_EQ(e.value[1], 1.0f);
  EXPECT_EQ(rule->name(), "geo_sum");
}

TEST(Initializer, DeterministicPerKeyAndIndex) {
  auto cfg = InitializerConfig::Uniform(-0.5f, 0.5f, 42);
  std::vector<float> a(8), b(8), tail(4), other(8);
  FillInitial(cfg, 7, 0, a);
  FillInitial(cfg, 7, 0, b);
  FillInitial(cfg, 7, 4, tail);
  FillInitial(cfg, 8, 0, other);
  EXPECT_EQ(a, b);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(tail[i], a[4 + i]);  // slicing-independent
  EXPECT_NE(a, other);
  for (float x : a) {
    EXPECT_GE(x, -0.5f);
    EXPECT_LT(x, 0.5f);
  }
  cfg.seed = 43;
  std::vector<float> reseeded(8);
  FillInitial(cfg, 7, 0, reseeded);
  EXPECT_NE(a, reseeded);
}

TEST(Initializer, NormalMomentsAndConstant) {
  std::vector<float> v(20000);
  FillInitial(InitializerConfig::Normal(1.0f, 2.0f, 5), 3, 0, v);
  double sum = 0, sq = 0;
  for (float x : v) {
    sum += x;
    sq += x * x;
  }
  const double mean = sum / v.size(), var = sq / v.size() - mean * mean;
  EXPECT_NEAR(mean, 1.0, 0.1);
  EXPECT_NEAR(var, 4.0, 0.3);
  FillInitial(InitializerConfig::Constant(0.25f), 3, 0, v);
  EXPECT_EQ(v[123], 0.25f);
}

TEST(Initializer, CustomFunctionIsInjected) {
  InitializerConfig cfg;
  cfg.custom = [](int64_t key, int64_t first, std::span<float> out) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(key * 100 + first + i);
  };
  std::vector<float> v(3);
  FillInitial(cfg, 2, 5, v);
  EXPECT_EQ(v, (std::vector<float>{205, 206, 207}));
}

}  // namespace
}  // namespace flotilla::ps
