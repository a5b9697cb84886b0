// Checkpoints and inference models of programs built with layers and trained
// with an optimizer: a resumed run matches an uninterrupted one bit for bit,
// and a fresh process serving the saved model gives the training program's
// predictions.
#include <gtest/gtest.h>

#include <cstring>

#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/io/checkpoint.h"
#include "flotilla/io/data_feeder.h"
#include "flotilla/io/datasets/synthetic.h"
#include "flotilla/io/inference_model.h"
#include "io/testing/inference_helper.h"
#include "io/testing/temp_dir.h"

namespace flotilla::io {
namespace {

constexpr uint64_t kSeed = 11;

// A small version of seed 001's mlp: 32 → 64 tanh → 2 softmax.
struct Mlp {
  Program main, startup, test;
  Variable x, y, prediction, loss;

  Mlp() {
    ProgramGuard guard(main, startup);
    UniqueNameGuard names;
    main.set_random_seed(kSeed);
    startup.set_random_seed(kSeed);
    x = layers::data("x", {32});
    y = layers::data("y", {1}, DType::kInt64);
    auto hidden = layers::fc(x, 64, 1, {}, {}, "tanh");
    prediction = layers::fc(hidden, 2, 1, {}, {}, "softmax");
    loss = layers::mean(layers::cross_entropy(prediction, y));
    test = main.Clone(/*for_test=*/true);
    optimizer::SGD(0.1f).minimize(loss);
  }
};

BatchReader TrainBatches(const synthetic::Dataset& data) {
  return Batch(Shuffle(data.train, 256, kSeed), 32, /*drop_last=*/true);
}

// Runs `steps` training steps from `next`.
void Train(Executor& exe, const Mlp& m, Scope& scope, BatchGenerator& next, int steps) {
  DataFeeder feeder({m.x, m.y});
  for (int i = 0; i < steps; ++i) {
    auto batch = next();
    ASSERT_TRUE(batch.has_value()) << "ran out of data at step " << i;
    exe.Run(m.main, feeder.Feed(*batch), {m.loss.name()}, &scope);
  }
}

void ExpectSameParameters(const Mlp& m, const Scope& a, const Scope& b) {
  for (const auto& name : PersistableNames(m.main)) {
    const Tensor& ta = a.GetVar(name).GetTensor();
    const Tensor& tb = b.GetVar(name).GetTensor();
    ASSERT_EQ(ta.dims(), tb.dims()) << name;
    EXPECT_EQ(0, std::memcmp(ta.raw_data(), tb.raw_data(), ta.nbytes())) << name;
  }
}

class IoIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterAllOps(); }
  synthetic::Dataset data = synthetic::Classification(2000, 32, 2, kSeed);
  testing::TempDir tmp;
};

TEST_F(IoIntegrationTest, AResumedRunMatchesAnUninterruptedOne) {
  Mlp m;
  Executor exe;
  const std::string ckpt = tmp / "ckpt";
  // Uninterrupted: 12 steps, with a checkpoint and reader position after 5.
  Scope full;
  exe.Run(m.startup, {}, {}, &full);
  auto position = std::make_shared<ReaderPosition>();
  BatchGenerator next = Track(TrainBatches(data), position)();
  Train(exe, m, full, next, 5);
  SavePersistables(exe, ckpt, m.main, full);
  const int64_t saved_batches = position->batches;
  Train(exe, m, full, next, 7);

  // Resumed in a new scope holding nothing but the checkpoint.
  Mlp again;
  Scope resumed;
  LoadPersistables(exe, ckpt, again.main, resumed);
  BatchGenerator rest = Skip(TrainBatches(data), saved_batches)();
  Train(exe, again, resumed, rest, 7);
  ExpectSameParameters(m, full, resumed);
}

TEST_F(IoIntegrationTest, AFreshProcessServesTheTrainedModel) {
  Mlp m;
  Executor exe;
  Scope scope;
  exe.Run(m.startup, {}, {}, &scope);
  BatchGenerator next = TrainBatches(data)();
  Train(exe, m, scope, next, 20);

  // The training program's own for-test clone is the reference (it also
  // computes the loss, so it takes the labels).
  std::vector<Sample> samples = ReadAll(data.test);
  samples.resize(50);
  FeedMap feed = DataFeeder({m.x, m.y}).Feed(samples);
  Tensor expected = exe.Run(m.test, feed, {m.prediction.name()}, &scope)[0];
  Tensor x = feed["x"];

  const std::string dir = tmp / "model";
  SaveInferenceModel(dir, {"x"}, {m.prediction.name()}, exe, m.main, scope);
  SaveTensor(tmp / "x.tensor", x);
  ASSERT_EQ(testing::RunInferenceHelper(dir, tmp.path(), {tmp / "x.tensor"}), 0);
  Tensor served = LoadTensor(tmp / "fetch_0.tensor");
  ASSERT_EQ(served.dims(), (Dims{50, 2}));
  EXPECT_EQ(served.ToVector<float>(), expected.ToVector<float>());
  // The model carries no training state: no gradients, no learning rate.
  for (const auto& e : ReadManifest(dir)) {
    EXPECT_EQ(e.name.find("@GRAD"), std::string::npos) << e.name;
    EXPECT_EQ(e.name.find("learning_rate"), std::string::npos) << e.name;
  }
  EXPECT_EQ(ReadManifest(dir).size(), 4u);  // two weights, two biases
}

}  // namespace
}  // namespace flotilla::io
