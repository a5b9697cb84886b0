#include "fleet/heter_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/common/error.h"
#include "flotilla/framework/executor.h"
#include "flotilla/fleet/distribute_transpiler.h"
#include "flotilla/framework/op_registry.h"

namespace flotilla::fleet {
namespace {

constexpr int64_t kSlots = 3, kVocab = 50, kDim = 4, kBatch = 8;

// A small wide & deep model: a wide sum over is_sparse embeddings of width
// 1, a deep embedding reshaped and concatenated with dense features.
struct Net {
  Program main, startup;
  std::string loss, wide, deep;
};

void Build(Net& n, bool sparse = true) {
  RegisterAllOps();
  ProgramGuard guard(n.main, n.startup);
  UniqueNameGuard names;
  n.main.set_random_seed(5);
  n.startup.set_random_seed(5);
  auto x = layers::data("x", {5});
  auto ids = layers::data("ids", {kSlots}, DType::kInt64);
  auto label = layers::data("label", {1});
  auto wide_w = layers::embedding(ids, {kVocab, 1}, sparse);
  auto wide = layers::reduce_sum(layers::reshape(wide_w, {-1, kSlots}), {1}, true);
  auto emb = layers::embedding(ids, {kVocab, kDim}, sparse);
  auto deep = layers::reshape(emb, {-1, kSlots * kDim});
  auto h = layers::fc(layers::concat({deep, x}, 1), 8, 1, {}, {}, "relu");
  auto logit = layers::elementwise_add(wide, layers::fc(h, 1));
  auto loss = layers::mean(layers::sigmoid_cross_entropy_with_logits(logit, label));
  optimizer::SGD(0.5f).minimize(loss);
  n.loss = loss.name();
  n.wide = wide.name();
  n.deep = deep.name();
}

FeedMap Batch(std::mt19937& rng) {
  std::vector<float> x(kBatch * 5), label(kBatch);
  std::vector<int64_t> ids(kBatch * kSlots);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_int_distribution<int64_t> id(0, kVocab - 1);
  for (auto& v : x) v = u(rng);
  for (auto& v : ids) v = id(rng);
  // Learnable by both parts: a dense feature plus an id's parity.
  for (int i = 0; i < kBatch; ++i) label[i] = x[i * 5] + (ids[i * kSlots] % 2 == 0 ? 0.5f : -0.5f) > 0 ? 1.0f : 0.0f;
  return {{"x", Tensor::FromVector(x, {kBatch, 5})},
          {"ids", Tensor::FromVector(ids, {kBatch, kSlots})},
          {"label", Tensor::FromVector(label, {kBatch, 1})}};
}

// One step of the split programs, passing values between them as the
// trainer and heter runtimes do.
float SplitStep(Executor& exe, const HeterSplit& s, const FeedMap& batch, const std::string& loss,
                Scope& scope) {
  std::vector<std::string> fetch = s.boundary;
  fetch.insert(fetch.end(), s.kept.begin(), s.kept.end());
  auto fwd = exe.Run(s.trainer_forward, batch, fetch, &scope);
  FeedMap to_heter, to_backward = batch;
  for (size_t i = 0; i < s.boundary.size(); ++i) to_heter[s.boundary[i]] = fwd[i];
  for (size_t i = 0; i < s.kept.size(); ++i) to_backward[s.kept[i]] = fwd[s.boundary.size() + i];
  for (const auto& n : s.heter_feeds) to_heter[n] = batch.at(n);
  std::vector<std::string> heter_fetch = s.boundary_grads;
  heter_fetch.push_back(loss);
  auto grads = exe.Run(s.heter, to_heter, heter_fetch, &scope);
  for (size_t i = 0; i < s.boundary_grads.size(); ++i) to_backward[s.boundary_grads[i]] = grads[i];
  exe.Run(s.trainer_backward, to_backward, {}, &scope);
  return grads.back().data<float>()[0];
}

TEST(HeterSplit, FindsTheBoundaryAndRunsLikeTheWholeProgram) {
  Net n;
  Build(n);
  HeterSplit s = SplitHeterProgram(n.main);
  std::vector<std::string> expected = {n.deep, n.wide};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(s.boundary, expected);
  EXPECT_EQ(s.heter_feeds, (std::vector<std::string>{"label", "x"}));
  EXPECT_EQ(s.boundary_grads.size(), 2u);
  for (const auto& op : s.heter.global_block().ops()) {
    EXPECT_NE(op->type, "lookup_table") << "the heter side looks up embeddings";
    EXPECT_NE(op->type, "lookup_table_grad");
  }
  for (const auto& op : s.trainer_forward.global_block().ops()) {
    EXPECT_NE(op->type, "mul") << "the trainer forward runs an fc";
  }

  Scope whole_scope, split_scope;
  Executor exe;
  exe.Run(n.startup, {}, {}, &whole_scope);
  exe.Run(n.startup, {}, {}, &split_scope);
  std::mt19937 rng(3);
  constexpr int kSteps = 200;
  float first = 0, last = 0;  // mean loss of the first and last 20 steps
  for (int step = 0; step < kSteps; ++step) {
    FeedMap batch = Batch(rng);
    const float whole = exe.Run(n.main, batch, {n.loss}, &whole_scope)[0].data<float>()[0];
    const float split = SplitStep(exe, s, batch, n.loss, split_scope);
    ASSERT_NEAR(whole, split, 1e-5f) << "step " << step;
    if (step < 20) first += split / 20;
    if (step >= kSteps - 20) last += split / 20;
  }
  EXPECT_LT(last, 0.8f * first) << "the model did not train";
}

TEST(HeterSplit, BoundaryOverrideMovesOpsToTheDenseSide) {
  Net n;
  Build(n);
  // Cut at the embedding outputs: the reshapes and the wide sum run on the heter side.
  std::vector<std::string> lookups;
  for (const auto& op : n.main.global_block().ops()) {
    if (op->type == "lookup_table") lookups.push_back(op->Output("Out"));
  }
  ASSERT_EQ(lookups.size(), 2u);
  HeterSplit s = SplitHeterProgram(n.main, lookups);
  std::sort(lookups.begin(), lookups.end());
  EXPECT_EQ(s.boundary, lookups);
  for (const auto& op : s.trainer_forward.global_block().ops()) {
    EXPECT_EQ(op->type, "lookup_table");
  }
  Scope whole_scope, split_scope;
  Executor exe;
  exe.Run(n.startup, {}, {}, &whole_scope);
  exe.Run(n.startup, {}, {}, &split_scope);
  std::mt19937 rng(4);
  for (int step = 0; step < 10; ++step) {
    FeedMap batch = Batch(rng);
    const float whole = exe.Run(n.main, batch, {n.loss}, &whole_scope)[0].data<float>()[0];
    ASSERT_NEAR(whole, SplitStep(exe, s, batch, n.loss, split_scope), 1e-5f) << "step " << step;
  }
}

TEST(HeterSplit, BadBoundariesAndDenseProgramsAreNamed) {
  Net n;
  Build(n);
  try {
    SplitHeterProgram(n.main, {"no_such_var"});
    FAIL() << "an unknown boundary variable was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'no_such_var' is not computed by the forward pass"),
              std::string::npos) << e.what();
  }
  Net dense;
  Build(dense, /*sparse=*/false);
  try {
    SplitHeterProgram(dense.main);
    FAIL() << "a program without sparse lookups was split";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("no sparse lookup"), std::string::npos) << e.what();
  }
}

const OpDesc* FindOp(const Program& p, const std::string& type) {
  for (const auto& op : p.global_block().ops()) {
    if (op->type == type) return op.get();
  }
  return nullptr;
}

TEST(HeterSplit, SplitsTheTranspiledPsProgramsPushes) {
  Net n;
  Build(n);
  DistributeTranspiler t;
  t.transpile(0, "127.0.0.1:7001", 3, /*sync_mode=*/false, &n.main, &n.startup);
  HeterSplit s = SplitHeterProgram(n.main);
  for (const Program* p : {&s.trainer_forward, &s.heter}) {
    ASSERT_NE(FindOp(*p, "ps_trainer_init"), nullptr);
    EXPECT_EQ(p->global_block().op(0).type, "ps_trainer_init");
  }
  EXPECT_EQ(FindOp(s.trainer_backward, "ps_trainer_init"), nullptr);
  EXPECT_EQ(FindOp(s.trainer_forward, "ps_send"), nullptr);
  const OpDesc* sparse_send = FindOp(s.trainer_backward, "ps_send");
  const OpDesc* dense_send = FindOp(s.heter, "ps_send");
  ASSERT_NE(sparse_send, nullptr);
  ASSERT_NE(dense_send, nullptr);
  EXPECT_EQ(sparse_send->Attr<std::vector<std::string>>("sparse_names").size(), 2u);
  EXPECT_TRUE(sparse_send->Attr<std::vector<std::string>>("dense_names").empty());
  EXPECT_TRUE(sparse_send->Inputs("Grad").empty());
  EXPECT_TRUE(dense_send->Attr<std::vector<std::string>>("sparse_names").empty());
  EXPECT_EQ(dense_send->Attr<std::vector<std::string>>("dense_names").size(), 4u);  // two fc W and b
  EXPECT_NE(FindOp(s.heter, "ps_recv"), nullptr);
  EXPECT_EQ(FindOp(s.trainer_backward, "ps_recv"), nullptr);
  EXPECT_NE(FindOp(s.trainer_forward, "distributed_lookup_table"), nullptr);
  EXPECT_NE(FindOp(s.trainer_backward, "distributed_lookup_table_grad"), nullptr);
}

TEST(HeterSplit, SyncPsProgramsAreRefused) {
  Net n;
  Build(n);
  DistributeTranspiler t;
  t.transpile(0, "127.0.0.1:7001", 2, /*sync_mode=*/true, &n.main, &n.startup);
  try {
    SplitHeterProgram(n.main);
    FAIL() << "a sync PS program was split";
  } catch (const Unimplemented& e) {
    EXPECT_NE(std::string(e.what()).find("async mode"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flotilla::fleet
