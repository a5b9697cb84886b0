#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "framework/ops/kernel_test_util.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {

// accuracy and auc are not differentiable.
void AddMetricGradChecks(GradCheckRegistry& registry) {}

namespace {

OpDesc AccuracyOp() {
  return OpDesc("accuracy")
      .In("Out", {"probs"})
      .In("Label", {"label"})
      .Out("Accuracy", {"acc"})
      .Out("Correct", {"correct"})
      .Out("Total", {"total"});
}

TEST(MetricOps, AccuracyTop1CountsArgmaxHits) {
  auto probs = Tensor::FromVector<float>({.1f, .9f, .8f, .2f, .3f, .7f}, {3, 2});
  auto label = Tensor::FromVector<int64_t>({1, 1, 1}, {3, 1});
  auto outs = RunOp(AccuracyOp(), {{"probs", probs}, {"label", label}});
  EXPECT_NEAR(outs.at("acc").ToVector<float>()[0], 2.0f / 3.0f, 1e-6);
  EXPECT_EQ(outs.at("correct").ToVector<int32_t>(), (std::vector<int32_t>{2}));
  EXPECT_EQ(outs.at("total").ToVector<int32_t>(), (std::vector<int32_t>{3}));
}

TEST(MetricOps, AccuracyTopKAndTiesGoToLowerColumn) {
  // Row 0: label 2 is third of three → miss at k=2. Row 1: label 0 ties with
  // column 2 and wins. Row 2: label 1 is second → hit.
  auto probs = Tensor::FromVector<double>({.5, .3, .2, .4, .2, .4, .1, .3, .6}, {3, 3});
  auto label = Tensor::FromVector<int64_t>({2, 0, 1}, {3, 1});
  auto k2 = RunOp(AccuracyOp().Set("k", int64_t{2}), {{"probs", probs}, {"label", label}});
  EXPECT_EQ(k2.at("correct").ToVector<int32_t>()[0], 2);
  auto k1 = RunOp(AccuracyOp(), {{"probs", probs}, {"label", label}});
  EXPECT_EQ(k1.at("correct").ToVector<int32_t>()[0], 1);
}

TEST(MetricOps, AccuracyUsesIndicesWhenGiven) {
  auto values = Tensor::FromVector<float>({.9f, .8f}, {2, 1});
  auto indices = Tensor::FromVector<int64_t>({3, 0}, {2, 1});
  auto label = Tensor::FromVector<int64_t>({3, 1}, {2, 1});
  auto outs = RunOp(AccuracyOp().In("Indices", {"indices"}),
                    {{"probs", values}, {"indices", indices}, {"label", label}});
  EXPECT_NEAR(outs.at("acc").ToVector<float>()[0], 0.5f, 1e-6);
}

TEST(MetricOps, AccuracyRejectsBadLabelAndK) {
  auto probs = Tensor::FromVector<float>({.1f, .9f}, {1, 2});
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunOp(AccuracyOp(), {{"probs", probs}, {"label", Tensor::FromVector<int64_t>({2}, {1, 1})}}); },
      {"accuracy", "label 2"});
  ExpectErrorMentions<InvalidArgument>(
      [&] {
        RunOp(AccuracyOp().Set("k", int64_t{0}), {{"probs", probs}, {"label", Tensor::FromVector<int64_t>({1}, {1, 1})}});
      },
      {"'k'"});
}

// ---- auc ----

constexpr int64_t kThresholds = 4095;

void InitAucScope(Scope& scope) {
  Tensor zeros(DType::kInt64, {kThresholds + 1});
  zeros.SetZero();
  SetTensor(scope, "pos", zeros);
  SetTensor(scope, "neg", zeros);
}

OpDesc AucOp() {
  return OpDesc("auc")
      .In("Predict", {"predict"})
      .In("Label", {"label"})
      .In("StatPos", {"pos"})
      .In("StatNeg", {"neg"})
      .Out("AUC", {"auc"})
      .Out("StatPosOut", {"pos"})
      .Out("StatNegOut", {"neg"});
}

double RunAucBatch(Scope& scope, const Tensor& predict, const Tensor& label) {
  SetTensor(scope, "predict", predict);
  SetTensor(scope, "label", label);
  RunKernel(AucOp(), scope);
  return scope.GetVar("auc").GetTensor().data<double>()[0];
}

// AUC by comparing every (positive, negative) pair; ties count half.
double ExactAuc(const std::vector<double>& score, const std::vector<int64_t>& label) {
  double hits = 0, pairs = 0;
  for (size_t i = 0; i < score.size(); ++i) {
    for (size_t j = 0; j < score.size(); ++j) {
      if (label[i] != 1 || label[j] != 0) continue;
      pairs += 1;
      hits += score[i] > score[j] ? 1.0 : score[i] == score[j] ? 0.5 : 0.0;
    }
  }
  return hits / pairs;
}

struct Batch {
  std::vector<double> score;
  std::vector<int64_t> label;
};

Batch RandomBatch(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Batch b;
  for (int i = 0; i < n; ++i) {
    b.label.push_back(u(rng) < 0.4 ? 1 : 0);
    b.score.push_back(std::min(1.0, 0.6 * u(rng) + 0.4 * b.label.back() * u(rng)));
  }
  return b;
}

// [N, 2] probabilities whose column 1 is the positive score.
Tensor TwoColumns(const std::vector<double>& score) {
  std::vector<float> v;
  for (double s : score) {
    v.push_back(static_cast<float>(1 - s));
    v.push_back(static_cast<float>(s));
  }
  return Tensor::FromVector<float>(v, {static_cast<int64_t>(score.size()), 2});
}

TEST(MetricOps, AucMatchesExactAucOfSortedPairs) {
  Batch b = RandomBatch(200, 7);
  Scope scope;
  InitAucScope(scope);
  double auc = RunAucBatch(scope, TwoColumns(b.score),
                           Tensor::FromVector<int64_t>(b.label, {200, 1}));
  EXPECT_NEAR(auc, ExactAuc(b.score, b.label), 1e-3);
  EXPECT_GT(auc, 0.6);
}

TEST(MetricOps, AucStreamsOverBatchesInPlace) {
  Batch a = RandomBatch(100, 8), b = RandomBatch(150, 9);
  Scope scope;
  InitAucScope(scope);
  RunAucBatch(scope, Tensor::FromVector<double>(a.score, {100, 1}), Tensor::FromVector<int64_t>(a.label, {100, 1}));
  double streamed = RunAucBatch(scope, Tensor::FromVector<double>(b.score, {150, 1}),
                                Tensor::FromVector<int64_t>(b.label, {150, 1}));
  Batch all = a;
  all.score.insert(all.score.end(), b.score.begin(), b.score.end());
  all.label.insert(all.label.end(), b.label.begin(), b.label.end());
  EXPECT_NEAR(streamed, ExactAuc(all.score, all.label), 1e-3);
  const Tensor& pos = scope.GetVar("pos").GetTensor();
  int64_t positives = 0;
  for (int64_t v : pos.ToVector<int64_t>()) positives += v;
  EXPECT_EQ(positives, std::count(all.label.begin(), all.label.end(), 1));
}

TEST(MetricOps, AucRejectsBadPredictionsWithoutTouchingStats) {
  Scope scope;
  InitAucScope(scope);
  auto predict = Tensor::FromVector<double>({0.5, 1.5}, {2, 1});
  auto label = Tensor::FromVector<int64_t>({1, 0}, {2, 1});
  ExpectErrorMentions<InvalidArgument>([&] { RunAucBatch(scope, predict, label); },
                                       {"auc", "Predict of row 1", "[0, 1]"});
  for (int64_t v : scope.GetVar("pos").GetTensor().ToVector<int64_t>()) ASSERT_EQ(v, 0);
}

TEST(MetricOps, AucRejectsWrongHistogramSize) {
  Scope scope;
  InitAucScope(scope);
  auto predict = Tensor::FromVector<double>({0.5}, {1, 1});
  auto label = Tensor::FromVector<int64_t>({1}, {1, 1});
  SetTensor(scope, "predict", predict);
  SetTensor(scope, "label", label);
  ExpectErrorMentions<InvalidArgument>(
      [&] { RunKernel(AucOp().Set("num_thresholds", int64_t{100}), scope); }, {"StatPos", "101"});
  ExpectErrorMentions<Unimplemented>([&] { RunKernel(AucOp().Set("curve", std::string("PR")), scope); },
                                     {"'curve'"});
}

}  // namespace
}  // namespace flotilla::testing
