#include <gtest/gtest.h>

#include <random>

#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla {
namespace {

class SequenceLayersTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterAllOps(); }
  Program main, startup;
  UniqueNameGuard names;
};

TEST_F(SequenceLayersTest, LoDLevelsFollowTheLayers) {
  ProgramGuard guard(main, startup);
  auto ids = layers::data("ids", {1}, DType::kInt64, true, 1);
  EXPECT_EQ(ids.desc().lod_level, 1);
  auto emb = layers::embedding(ids, {10, 4});
  EXPECT_EQ(emb.desc().lod_level, 1);
  auto pooled = layers::sequence_pool(emb, "max");
  EXPECT_EQ(pooled.desc().lod_level, 0);
  EXPECT_EQ(pooled.shape(), (Dims{-1, 4}));
  EXPECT_EQ(main.global_block().ops().back()->Outputs("MaxIndex").size(), 1u);
  auto padded = layers::sequence_pad(emb, layers::fill_constant({1}, DType::kFloat32, 0.0), 5);
  EXPECT_EQ(padded.out.shape(), (Dims{-1, 5, 4}));
  EXPECT_EQ(layers::sequence_unpad(padded.out, padded.length).desc().lod_level, 1);
  EXPECT_THROW(layers::data("bad", {1}, DType::kInt64, true, -1), InvalidArgument);
}

// embedding(LoD ids) + sequence_pool + fc: a bag-of-ids classifier whose
// label is whether id 0 occurs in the sequence. Plain SGD drives it down.
TEST_F(SequenceLayersTest, BagOfIdsModelTrains) {
  ProgramGuard guard(main, startup);
  auto ids = layers::data("ids", {1}, DType::kInt64, true, 1);
  auto label = layers::data("label", {1}, DType::kInt64);
  auto bag = layers::sequence_pool(layers::embedding(ids, {20, 8}, true), "sum");
  auto logits = layers::fc(bag, 2);
  auto loss = layers::mean(layers::softmax_with_cross_entropy(logits, label));
  optimizer::SGD sgd(0.2f);
  sgd.minimize(loss);
  Executor exe;
  Scope scope;
  exe.Run(startup, {}, {}, &scope);
  std::mt19937 rng(3);
  auto batch = [&] {
    std::vector<int64_t> values, labels;
    std::vector<int64_t> lengths;
    for (int s = 0; s < 16; ++s) {
      const int64_t n = s % 5;  // lengths 0..4, empty sequences included
      bool has_zero = false;
      for (int64_t i = 0; i < n; ++i) {
        values.push_back(static_cast<int64_t>(rng() % 20));
        has_zero |= values.back() == 0;
      }
      lengths.push_back(n);
      labels.push_back(has_zero ? 1 : 0);
    }
    Tensor t = Tensor::FromVector<int64_t>(values, {static_cast<int64_t>(values.size()), 1});
    t.set_lod(LengthsToOffsets({lengths}));
    return FeedMap{{"ids", t}, {"label", Tensor::FromVector<int64_t>(labels, {16, 1})}};
  };
  float first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    float l = exe.Run(main, batch(), {loss.name()}, &scope)[0].ToVector<float>()[0];
    if (step < 20) first += l / 20;
    if (step >= 180) last += l / 20;
  }
  EXPECT_LT(last, 0.6f * first) << "first 20 steps " << first << ", last 20 " << last;
}

}  // namespace
}  // namespace flotilla
