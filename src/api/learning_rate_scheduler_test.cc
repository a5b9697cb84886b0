// Schedules run through the executor, step by step, against Paddle's
// formulas computed here in double precision; training with a schedule
// against training with the same rates set by hand; the step counter under
// Clone(for_test).
#include "flotilla/api/learning_rate_scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <random>

#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla {
namespace {

using Formula = std::function<double(double step)>;

int64_t Counter(Scope& scope) {
  return scope.GetVar(layers::kLearningRateCounterName).GetTensor().data<int64_t>()[0];
}

// Builds the schedule in fresh programs, runs the main program `steps` times
// and returns the rate fetched at each run.
std::vector<double> RunSchedule(const std::function<Variable()>& build, int steps) {
  RegisterAllOps();
  UniqueNameGuard names;
  Program main, startup;
  ProgramGuard guard(main, startup);
  Variable lr = build();
  EXPECT_EQ(lr.shape(), Dims{1});
  EXPECT_EQ(lr.dtype(), DType::kFloat32);
  Executor exe;
  Scope scope;
  exe.Run(startup, {}, {}, &scope);
  std::vector<double> got;
  for (int i = 0; i < steps; ++i)
    got.push_back(exe.Run(main, {}, {lr.name()}, &scope)[0].data<float>()[0]);
  EXPECT_EQ(Counter(scope), steps - 1);
  return got;
}

void ExpectSchedule(const std::function<Variable()>& build, const Formula& formula,
                    int steps = 12) {
  std::vector<double> got = RunSchedule(build, steps);
  for (int s = 0; s < steps; ++s) {
    double want = formula(s);
    EXPECT_NEAR(got[s], want, 1e-6 * std::abs(want) + 1e-12) << "step " << s;
  }
}

// Rates are float attributes: the formulas use the same float inputs.
constexpr double kLr = 0.1f;
constexpr double kRate = 0.5f;

TEST(LearningRateScheduler, ExponentialDecay) {
  ExpectSchedule([] { return layers::exponential_decay(0.1f, 3, 0.5f); },
                 [](double s) { return kLr * std::pow(kRate, s / 3); });
  ExpectSchedule([] { return layers::exponential_decay(0.1f, 3, 0.5f, true); },
                 [](double s) { return kLr * std::pow(kRate, std::floor(s / 3)); });
}

TEST(LearningRateScheduler, NaturalExpDecay) {
  ExpectSchedule([] { return layers::natural_exp_decay(0.1f, 3, 0.5f); },
                 [](double s) { return kLr * std::exp(-kRate * s / 3); });
  ExpectSchedule([] { return layers::natural_exp_decay(0.1f, 3, 0.5f, true); },
                 [](double s) { return kLr * std::exp(-kRate * std::floor(s / 3)); });
}

TEST(LearningRateScheduler, InverseTimeDecay) {
  ExpectSchedule([] { return layers::inverse_time_decay(0.1f, 3, 0.5f); },
                 [](double s) { return kLr / (1 + kRate * s / 3); });
  ExpectSchedule([] { return layers::inverse_time_decay(0.1f, 3, 0.5f, true); },
                 [](double s) { return kLr / (1 + kRate * std::floor(s / 3)); });
}

TEST(LearningRateScheduler, PolynomialDecayCapsAtDecaySteps) {
  const double end = 0.01f;
  ExpectSchedule(
      [] { return layers::polynomial_decay(0.1f, 4, 0.01f, 2.0f); },
      [=](double s) { return (kLr - end) * std::pow(1 - std::min(s, 4.0) / 4, 2) + end; });
}

TEST(LearningRateScheduler, PolynomialDecayCycles) {
  const double end = 0.01f;
  Formula formula = [=](double s) {
    double decay_steps = 4 * std::max(1.0, std::ceil(s / 4));  // step 0: first cycle
    return (kLr - end) * std::pow(1 - s / decay_steps, 1.5) + end;
  };
  ExpectSchedule([] { return layers::polynomial_decay(0.1f, 4, 0.01f, 1.5f, true); }, formula);
  // Cycles restart at the rate just below the start, not at the end rate.
  std::vector<double> got =
      RunSchedule([] { return layers::polynomial_decay(0.1f, 4, 0.01f, 1.5f, true); }, 6);
  EXPECT_NEAR(got[4], end, 1e-9);
  EXPECT_GT(got[5], got[4]);
}

TEST(LearningRateScheduler, PiecewiseDecayBoundaries) {
  std::vector<double> got = RunSchedule(
      [] {
        return layers::piecewise_decay({2, 5}, {1.0f, 0.5f, 0.1f});
      },
      8);
  std::vector<double> want = {1.0, 1.0, 0.5, 0.5, 0.5, 0.1f, 0.1f, 0.1f};
  for (size_t s = 0; s < want.size(); ++s)
    EXPECT_NEAR(got[s], want[s], 1e-6 * want[s]) << "step " << s;
}

TEST(LearningRateScheduler, CosineDecayPerEpoch) {
  const double lr = 0.2f;
  ExpectSchedule([] { return layers::cosine_decay(0.2f, 2, 5); },
                 [=](double s) {
                   return lr * 0.5 * (std::cos(std::floor(s / 2) * std::numbers::pi / 5) + 1);
                 });
}

TEST(LearningRateScheduler, NoamDecayCountsFromOne) {
  ExpectSchedule([] { return layers::noam_decay(16, 4, 2.0f); },
                 [](double step) {
                   double s = step + 1;
                   return 2.0 * std::pow(16, -0.5) *
                          std::min(std::pow(s, -0.5), std::pow(4, -1.5) * s);
                 });
}

TEST(LearningRateScheduler, LinearWarmupThenConstant) {
  const double lr = 0.3f, end = 0.2f;
  ExpectSchedule([] { return layers::linear_lr_warmup(0.3f, 4, 0.0f, 0.2f); },
                 [=](double s) { return s < 4 ? end * s / 4 : lr; });
}

TEST(LearningRateScheduler, LinearWarmupThenSchedule) {
  const double start = 0.01f, end = 0.1f;
  ExpectSchedule(
      [] {
        return layers::linear_lr_warmup(layers::exponential_decay(0.1f, 3, 0.5f, true), 5, 0.01f,
                                        0.1f);
      },
      [=](double s) {
        return s < 5 ? start + (end - start) * s / 5 : kLr * std::pow(kRate, std::floor(s / 3));
      });
}

TEST(LearningRateScheduler, SurvivesSerialization) {
  RegisterAllOps();
  UniqueNameGuard names;
  Program main, startup;
  ProgramGuard guard(main, startup);
  Variable lr =
      layers::linear_lr_warmup(layers::piecewise_decay({4}, {0.5f, 0.25f}), 2, 0.0f, 0.5f);
  Program parsed_main = Program::Parse(main.Serialize());
  Program parsed_startup = Program::Parse(startup.Serialize());
  Executor exe;
  Scope scope;
  exe.Run(parsed_startup, {}, {}, &scope);
  std::vector<float> got;
  for (int i = 0; i < 6; ++i)
    got.push_back(exe.Run(parsed_main, {}, {lr.name()}, &scope)[0].data<float>()[0]);
  EXPECT_EQ(got, (std::vector<float>{0.0f, 0.25f, 0.5f, 0.5f, 0.25f, 0.25f}));
}

TEST(LearningRateScheduler, OneCounterAheadOfTheForwardPass) {
  RegisterAllOps();
  UniqueNameGuard names;
  Program main, startup;
  ProgramGuard guard(main, startup);
  auto x = layers::data("x", {2});
  auto h = layers::fc(x, 1);
  layers::exponential_decay(0.1f, 3, 0.5f);
  layers::cosine_decay(0.1f, 3, 5);
  Block& block = main.global_block();
  ASSERT_GE(block.op_size(), 3u);
  EXPECT_EQ(block.op(0).type, "increment");
  EXPECT_EQ(block.op(1).Attr<std::string>("kind"), "exponential_decay");
  EXPECT_EQ(block.op(2).Attr<std::string>("kind"), "cosine_decay");
  int increments = 0;
  for (const auto& op : block.ops()) increments += op->type == "increment";
  EXPECT_EQ(increments, 1);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(block.op(i).Role(), kOpRoleLRSched);
  const VarDesc& counter = block.Var(layers::kLearningRateCounterName);
  EXPECT_TRUE(counter.persistable);
  EXPECT_EQ(counter.dtype, DType::kInt64);
}

TEST(LearningRateScheduler, BadArgumentsNameTheAttribute) {
  RegisterAllOps();
  Program main, startup;
  ProgramGuard guard(main, startup);
  auto expect = [](const std::function<void()>& body, const std::string& attr) {
    try {
      body();
      ADD_FAILURE() << "expected InvalidArgument naming " << attr;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("'" + attr + "'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("lr_schedule"), std::string::npos) << e.what();
    }
  };
  expect([] { layers::exponential_decay(0.1f, 0, 0.5f); }, "decay_steps");
  expect([] { layers::polynomial_decay(0.1f, -1); }, "decay_steps");
  expect([] { layers::piecewise_decay({1, 2}, {1.0f}); }, "values");
  expect([] { layers::cosine_decay(0.1f, 0, 3); }, "step_each_epoch");
  expect([] { layers::noam_decay(0, 4); }, "d_model");
  expect([] { layers::linear_lr_warmup(0.1f, 0, 0, 0.1f); }, "warmup_steps");
}

// ---- training with a schedule ----

struct Regression {
  Program main, startup;
  Variable loss;
  std::vector<std::string> params;
};

// y = fc(x) fitted by mean squared error with `opt`.
void BuildRegression(Regression& r,
                     const std::function<std::unique_ptr<optimizer::Optimizer>()>& make_opt,
                     std::string* lr_name) {
  UniqueNameGuard names;
  ProgramGuard guard(r.main, r.startup);
  auto x = layers::data("x", {3});
  auto y = layers::data("y", {1});
  r.loss = layers::mean(layers::square_error_cost(layers::fc(x, 1), y));
  auto opt = make_opt();
  for (const auto& pg : opt->minimize(r.loss).params_grads) r.params.push_back(pg.first.name());
  *lr_name = opt->learning_rate_var().name();
}

FeedMap RegressionFeed() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> xs(16 * 3), ys(16);
  for (auto& v : xs) v = u(rng);
  for (auto& v : ys) v = u(rng);
  return {{"x", Tensor::FromVector(xs, {16, 3})}, {"y", Tensor::FromVector(ys, {16, 1})}};
}

TEST(LearningRateScheduler, SgdReadsTheScheduledRateEachStep) {
  RegisterAllOps();
  Regression scheduled, manual;
  std::string sched_lr, manual_lr;
  BuildRegression(
      scheduled,
      [] { return std::make_unique<optimizer::SGD>(layers::exponential_decay(0.1f, 2, 0.5f)); },
      &sched_lr);
  BuildRegression(
      manual, [] { return std::make_unique<optimizer::SGD>(1.0f); }, &manual_lr);
  // The scheduled SGD reads the schedule's variable; nothing fills it at startup.
  for (const auto& op : scheduled.startup.global_block().ops()) {
    for (const auto& out : op->OutputArgumentNames()) EXPECT_NE(out, sched_lr);
  }
  ASSERT_EQ(scheduled.params, manual.params);

  Executor exe;
  Scope s_scope, m_scope;
  exe.Run(scheduled.startup, {}, {}, &s_scope);
  exe.Run(manual.startup, {}, {}, &m_scope);
  std::map<std::string, Tensor> initial;
  for (const auto& p : scheduled.params) initial[p] = s_scope.GetVar(p).GetTensor().Clone();
  for (const auto& [p, t] : initial) m_scope.Var(p)->GetMutableTensor()->CopyFrom(t);
  FeedMap feed = RegressionFeed();
  const int steps = 7;
  for (int s = 0; s < steps; ++s) {
    auto rate = static_cast<float>(kLr * std::pow(kRate, s / 2.0));
    exe.Run(scheduled.main, feed, {}, &s_scope);
    m_scope.GetVar(manual_lr).GetMutableTensor()->data<float>()[0] = rate;
    exe.Run(manual.main, feed, {}, &m_scope);
  }
  bool changed = false;
  for (const auto& p : scheduled.params) {
    const Tensor& a = s_scope.GetVar(p).GetTensor();
    const Tensor& b = m_scope.GetVar(p).GetTensor();
    ASSERT_EQ(a.numel(), b.numel());
    for (int64_t i = 0; i < a.numel(); ++i) {
      EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-6) << p << "[" << i << "]";
    }
  }
  // And the rates mattered: the constant rate 0.1 gives other parameters.
  Regression constant;
  std::string const_lr;
  BuildRegression(
      constant, [] { return std::make_unique<optimizer::SGD>(0.1f); }, &const_lr);
  Scope c_scope;
  exe.Run(constant.startup, {}, {}, &c_scope);
  for (const auto& [p, t] : initial) c_scope.Var(p)->GetMutableTensor()->CopyFrom(t);
  for (int s = 0; s < steps; ++s) exe.Run(constant.main, feed, {}, &c_scope);
  for (const auto& p : scheduled.params) {
    const Tensor& a = s_scope.GetVar(p).GetTensor();
    const Tensor& c = c_scope.GetVar(p).GetTensor();
    for (int64_t i = 0; i < a.numel(); ++i)
      changed |= std::abs(a.data<float>()[i] - c.data<float>()[i]) > 1e-4;
  }
  EXPECT_TRUE(changed);
}

TEST(LearningRateScheduler, OptimizerReportsItsKindOfRate) {
  RegisterAllOps();
  Program main, startup;
  ProgramGuard guard(main, startup);
  optimizer::SGD constant(0.25f);
  EXPECT_FALSE(constant.scheduled_learning_rate());
  EXPECT_FLOAT_EQ(constant.learning_rate(), 0.25f);
  Variable lr = layers::exponential_decay(0.1f, 10, 0.5f);
  optimizer::Adam scheduled(lr);
  EXPECT_TRUE(scheduled.scheduled_learning_rate());
  EXPECT_EQ(scheduled.learning_rate_var().name(), lr.name());
  EXPECT_THROW(scheduled.learning_rate(), InvalidArgument);
  EXPECT_THROW(optimizer::SGD(layers::lr_decay_step_counter()), InvalidArgument);  // int64
}

TEST(LearningRateScheduler, CloneForTestDoesNotAdvanceTheStep) {
  RegisterAllOps();
  Regression r;
  std::string lr_name;
  BuildRegression(
      r,
      [] {
        return std::make_unique<optimizer::Momentum>(layers::piecewise_decay({3}, {0.1f, 0.01f}),
                                                     0.9f);
      },
      &lr_name);
  Program test = r.main.Clone(/*for_test=*/true);
  for (const auto& op : test.global_block().ops()) {
    EXPECT_EQ(op->Role() & kOpRoleLRSched, 0) << op->DebugString();
  }
  Executor exe;
  Scope scope;
  exe.Run(r.startup, {}, {}, &scope);
  FeedMap feed = RegressionFeed();
  exe.Run(r.main, feed, {}, &scope);
  exe.Run(r.main, feed, {}, &scope);
  ASSERT_EQ(Counter(scope), 1);
  for (int i = 0; i < 3; ++i) exe.Run(test, feed, {r.loss.name()}, &scope);
  EXPECT_EQ(Counter(scope), 1);
  exe.Run(r.main, feed, {}, &scope);
  EXPECT_EQ(Counter(scope), 2);
}

}  // namespace
}  // namespace flotilla
