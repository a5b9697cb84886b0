// The trainer's pipeline overlaps its own work with the heter worker's:
// with two mini-batches in flight a step costs about the slower side, with
// one about the sum of both.
#include "fleet/heter_pipeline.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla::fleet {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int64_t kBatch = 4;
constexpr auto kWork = 100ms;  // each side's time per mini-batch

struct Net {
  Program main, startup;
  std::string loss;
};

void Build(Net& n) {
  RegisterAllOps();
  ProgramGuard guard(n.main, n.startup);
  UniqueNameGuard names;
  auto x = layers::data("x", {3});
  auto ids = layers::data("ids", {2}, DType::kInt64);
  auto emb = layers::reshape(layers::embedding(ids, {20, 4}, /*is_sparse=*/true), {-1, 8});
  auto pred = layers::fc(layers::concat({emb, x}, 1), 1);
  auto loss = layers::mean(layers::square(pred));
  optimizer::SGD(0.1f).minimize(loss);
  n.loss = loss.name();
}

// A heter worker that takes kWork per batch and answers zero gradients.
ps::NamedTensors SlowZeroGrads(const ps::NamedTensors& in) {
  std::this_thread::sleep_for(kWork);
  ps::NamedTensors out;
  for (const auto& [name, t] : in) {
    if (name == "x") continue;
    Tensor g(DType::kFloat32, t.dims());
    for (int64_t i = 0; i < g.numel(); ++i) g.data<float>()[i] = 0;
    out.emplace_back(name + kGradSuffix, g);
  }
  return out;
}

// Seconds for 8 steps in which the trainer also works kWork per batch.
double EightSteps(const HeterSplit& split, const std::string& endpoint, int depth) {
  Executor exe;
  HeterPipeline pipeline(split, std::make_unique<ps::HeterClient>(endpoint, 0), depth);
  FeedMap feed = {{"x", Tensor::FromVector<float>(std::vector<float>(kBatch * 3, 0.5f), {kBatch, 3})},
                  {"ids", Tensor::FromVector<int64_t>({1, 2, 3, 4, 5, 6, 7, 8}, {kBatch, 2})}};
  const auto start = Clock::now();
  for (int step = 0; step < 8; ++step) {
    pipeline.Step(exe, feed);
    std::this_thread::sleep_for(kWork);
  }
  pipeline.Drain(exe);
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(HeterPipeline, TwoBatchesInFlightOverlapTrainerAndHeterWorker) {
  Net n;
  Build(n);
  HeterSplit split = SplitHeterProgram(n.main);
  Executor init;
  init.Run(n.startup);
  ps::HeterServer worker({.endpoint = "127.0.0.1:0", .num_trainers = 0},
                         [](int, const ps::NamedTensors& in, const std::vector<std::string>&) {
                           return SlowZeroGrads(in);
                         });
  worker.Start();
  const std::string endpoint = "127.0.0.1:" + std::to_string(worker.port());
  const double serial = EightSteps(split, endpoint, 1);
  const double pipelined = EightSteps(split, endpoint, 2);
  // Serial: 8 x (100 + 100) ms; pipelined: about 8 x 100 + 100 ms.
  EXPECT_GT(serial, 1.5);
  EXPECT_LT(pipelined, 0.75 * serial) << "serial " << serial << " s, pipelined " << pipelined << " s";
  EXPECT_EQ(worker.batches(), 16);
}

}  // namespace
}  // namespace flotilla::fleet
