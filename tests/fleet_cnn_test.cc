// Data-parallel training of a convolutional network: with sync_batch_norm,
// two ranks on half batches end with the parameters (and batch-norm moving
// statistics) of one process on the combined batch; without it they do not
// (each rank normalises by its own half).
#include <gtest/gtest.h>

#include <cstdio>
#include <mutex>
#include <random>

#include "fleet_test_util.h"
#include "flotilla/models/resnet.h"

namespace flotilla::fleet::testing {
namespace {

constexpr int kSteps = 10;
constexpr int64_t kGlobalBatch = 8;

// conv-bn-relu, a ResNet basic block with a projection shortcut, global
// average pool, fc; Momentum with L2 decay (seed 001's optimiser).
struct Cnn {
  std::unique_ptr<Program> main = std::make_unique<Program>();
  std::unique_ptr<Program> startup = std::make_unique<Program>();
  Variable loss;
  std::vector<std::string> state;  // parameters and moving statistics
  std::unique_ptr<optimizer::Momentum> opt;
  std::unique_ptr<DistributedOptimizer> dist;
};

Cnn BuildCnn(Fleet* fleet, const DistributedStrategy& strategy) {
  Cnn m;
  UniqueNameGuard names;
  ProgramGuard guard(*m.main, *m.startup);
  auto image = layers::data("image", {3, 8, 8});
  auto label = layers::data("label", {1}, DType::kInt64);
  auto c = models::ConvBnLayer(image, 4, 3, 1, "relu", "conv1");
  auto b = models::BasicBlock(c, 6, 2, false, "res2a");
  auto pool = layers::pool2d(b, 1, "avg", 1, 0, true);
  auto logits = layers::fc(pool, 3);
  m.loss = layers::mean(layers::softmax_with_cross_entropy(logits, label));
  m.opt = std::make_unique<optimizer::Momentum>(0.05f, 0.9f, false, regularizer::L2Decay(1e-3f));
  if (fleet != nullptr) {
    m.dist = std::make_unique<DistributedOptimizer>(fleet->distributed_optimizer(*m.opt, strategy));
    m.dist->minimize(m.loss, m.startup.get());
  } else {
    m.opt->minimize(m.loss, m.startup.get());
  }
  for (const VarDesc* v : m.main->global_block().AllVars()) {
    if (v->persistable && v->is_parameter) m.state.push_back(v->name);
  }
  return m;
}

FeedMap Rows(int step, int64_t begin, int64_t end) {
  std::mt19937 rng(1000 + step);
  std::normal_distribution<float> pixel(0.0f, 1.0f);
  std::vector<float> x(kGlobalBatch * 3 * 64);
  std::vector<int64_t> y(kGlobalBatch);
  for (auto& v : x) v = pixel(rng);
  for (int64_t i = 0; i < kGlobalBatch; ++i) y[i] = (i + step) % 3;
  const int64_t n = end - begin;
  std::vector<float> xs(x.begin() + begin * 192, x.begin() + end * 192);
  std::vector<int64_t> ys(y.begin() + begin, y.begin() + end);
  return {{"image", Tensor::FromVector(xs, {n, 3, 8, 8})}, {"label", Tensor::FromVector(ys, {n, 1})}};
}

struct Result {
  Params initial;
  std::vector<Params> final_params;
};

Result TrainTwoRanks(bool sync_bn) {
  Result result;
  result.final_params.resize(2);
  DistributedStrategy strategy;
  strategy.set_sync_batch_norm(sync_bn);
  std::mutex mu;
  RunRanks(2, [&](int rank, Fleet& fleet) {
    Cnn m = BuildCnn(&fleet, strategy);
    Executor exe;
    Scope scope;
    exe.Run(*m.startup, {}, {}, &scope);
    if (rank == 0) {
      std::lock_guard<std::mutex> lock(mu);
      result.initial = Snapshot(scope, m.state);
    }
    const int64_t half = kGlobalBatch / 2;
    for (int s = 0; s < kSteps; ++s) exe.Run(*m.main, Rows(s, rank * half, (rank + 1) * half), {}, &scope);
    std::lock_guard<std::mutex> lock(mu);
    result.final_params[rank] = Snapshot(scope, m.state);
  });
  return result;
}

Params TrainOneProcess(const Params& initial) {
  Cnn m = BuildCnn(nullptr, {});
  Executor exe;
  Scope scope;
  exe.Run(*m.startup, {}, {}, &scope);
  Restore(scope, initial);
  for (int s = 0; s < kSteps; ++s) exe.Run(*m.main, Rows(s, 0, kGlobalBatch), {}, &scope);
  return Snapshot(scope, m.state);
}

TEST(FleetCnn, SyncBatchNormTwoRanksEqualOneProcessOnTheCombinedBatch) {
  Result dist = TrainTwoRanks(/*sync_bn=*/true);
  Params single = TrainOneProcess(dist.initial);
  ASSERT_TRUE(single.count("bn2a_branch2a_mean")) << "moving statistics are compared too";
  for (int r = 0; r < 2; ++r) {
    const float diff = MaxAbsDiff(dist.final_params[r], single);
    std::printf("[cnn equivalence] sync_batch_norm rank %d: max |param - single| = %.3g\n", r, diff);
    EXPECT_LT(diff, 1e-5f) << "rank " << r;
  }
  EXPECT_GT(MaxAbsDiff(dist.initial, single), 1e-2f) << "training must move the parameters";
}

TEST(FleetCnn, PerRankBatchNormDiffersFromOneProcess) {
  Result dist = TrainTwoRanks(/*sync_bn=*/false);
  Params single = TrainOneProcess(dist.initial);
  const float diff = MaxAbsDiff(dist.final_params[0], single);
  std::printf("[cnn equivalence] per-rank batch_norm: max |param - single| = %.3g\n", diff);
  EXPECT_GT(diff, 1e-4f);
}

}  // namespace
}  // namespace flotilla::fleet::testing
