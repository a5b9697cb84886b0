#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "flotilla/common/error.h"
#include "flotilla/ps/sparse_table.h"
#include "ps/table_test_util.h"

namespace flotilla::ps {
namespace {

using table_testing::SparseConfig;

// A momentum row that no gradient reaches still moves every step; the
// table catches it up when it is next touched, so lazily kept rows end
// where rows updated every step (with zero gradients) do.
TEST(SparseTable, MomentumRowsCatchUpOnTheStepsTheyMissed) {
  const auto rule = UpdateRuleConfig::Momentum(0.1f, 0.9f);
  SparseTable lazy(SparseConfig(2, rule)), eager(SparseConfig(2, rule));
  const std::vector<int64_t> both{3, 8};
  std::vector<float> g{1.0f, -1.0f, 0.5f, 0.25f}, a(4), b(4), first(2);
  for (int round = 0; round < 6; ++round) {
    // lazy: only key 3 gets a gradient after round 0; eager: both keys, key 8's zero
    if (round == 0) {
      lazy.Accumulate(both, g);
      eager.Accumulate(both, g);
    } else {
      lazy.Accumulate(std::vector<int64_t>{3}, std::span<const float>(g).first(2));
      std::vector<float> mixed{g[0], g[1], 0.0f, 0.0f};
      eager.Accumulate(both, mixed);
    }
    lazy.ApplyPending(1);
    eager.ApplyPending(1);
    if (round == 0) eager.Pull(std::vector<int64_t>{8}, first);
  }
  lazy.Pull(both, a);
  eager.Pull(both, b);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << i;
  // async pushes are steps too; a saved table keeps its step
  lazy.Push(std::vector<int64_t>{3}, std::span<const float>(g).first(2));
  eager.Push(both, std::vector<float>{g[0], g[1], 0.0f, 0.0f});
  SparseTable loaded(SparseConfig(2, rule));
  loaded.Deserialize(lazy.Serialize(), "image");
  loaded.Pull(both, a);
  eager.Pull(both, b);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << i;
  EXPECT_GT(std::abs(a[2] - first[0]), 0.1f) << "key 8 kept moving without gradients";
}

// Sparse rows saved by 2 servers (key mod 2) move to the server of key mod
// 3; momentum rows are brought current first and keep their velocity.
TEST(SparseTable, ReshardForAnotherServerCount) {
  const auto rule = UpdateRuleConfig::Momentum(0.1f, 0.9f);
  std::vector<int64_t> keys(40);
  for (int64_t i = 0; i < 40; ++i) keys[i] = i * 7;
  auto push = [&](std::vector<std::unique_ptr<SparseTable>>& tables, int n, int step, int64_t skip) {
    for (int s = 0; s < n; ++s) {
      std::vector<int64_t> mine;
      std::vector<float> g;
      for (int64_t k : keys) {
        if (ModSlicer(k, n) != s || k % skip == 0) continue;
        mine.push_back(k);
        g.insert(g.end(), {std::cos(0.1f * k + step), 0.5f});
      }
      tables[s]->Push(mine, g);
    }
  };
  auto pull = [&](std::vector<std::unique_ptr<SparseTable>>& tables, int n) {
    std::vector<float> out;
    for (int64_t k : keys) {
      std::vector<float> row(2);
      tables[ModSlicer(k, n)]->Pull(std::vector<int64_t>{k}, row);
      out.insert(out.end(), row.begin(), row.end());
    }
    return out;
  };
  std::vector<std::unique_ptr<SparseTable>> two, three;
  for (int s = 0; s < 2; ++s) two.push_back(std::make_unique<SparseTable>(SparseConfig(2, rule)));
  for (int s = 0; s < 3; ++s) three.push_back(std::make_unique<SparseTable>(SparseConfig(2, rule)));
  push(two, 2, 0, 1000);
  push(two, 2, 1, 3);  // keys divisible by 3 miss this step
  std::vector<std::string> images{two[0]->Serialize(), two[1]->Serialize()};
  for (int s = 0; s < 3; ++s) {
    three[s]->DeserializeResharded(images, [s](int64_t k) { return ModSlicer(k, 3) == s; }, "images");
  }
  const std::vector<float> expected = pull(two, 2);
  EXPECT_EQ(pull(three, 3), expected);
  int64_t held = 0;
  for (auto& t : three) held += t->size();
  EXPECT_EQ(held, 40);
  push(two, 2, 2, 1000);
  push(three, 3, 2, 1000);
  const std::vector<float> a = pull(two, 2), b = pull(three, 3);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << i;
}

TEST(SparseTable, RowsCreatedOnFirstPullAreDeterministic) {
  SparseTable a(SparseConfig(3)), b(SparseConfig(3));
  std::vector<int64_t> keys{5, 1, 5, 1000000007};
  std::vector<float> ra(12), rb(12);
  a.Pull(keys, ra);
  std::vector<int64_t> reversed(keys.rbegin(), keys.rend());
  b.Pull(reversed, rb);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) EXPECT_EQ(ra[i * 3 + j], rb[(3 - i) * 3 + j]);
  }
  EXPECT_EQ(ra[0], ra[6]);  // same key, same row
  EXPECT_NE(ra[0], ra[3]);
  EXPECT_EQ(a.size(), 3);
}

TEST(SparseTable, PushAppliesRulePerRowAndSyncAverages) {
  SparseTable t(SparseConfig(2));
  std::vector<int64_t> keys{3};
  std::vector<float> init(2), after(2);
  t.Pull(keys, init);
  t.Push(keys, std::vector<float>{1.0f, -1.0f});
  t.Pull(keys, after);
  EXPECT_FLOAT_EQ(after[0], init[0] - 0.5f);
  EXPECT_FLOAT_EQ(after[1], init[1] + 0.5f);
  // Two trainers' gradients for key 3 plus one for key 4, averaged over 2.
  t.Accumulate(std::vector<int64_t>{3, 4}, std::vector<float>{2, 2, 4, 4});
  t.Accumulate(std::vector<int64_t>{3}, std::vector<float>{2, 2});
  t.ApplyPending(2);
  std::vector<float> r3(2), r4(2), init4(2);
  t.Pull(keys, r3);
  EXPECT_FLOAT_EQ(r3[0], after[0] - 0.5f * 2.0f);
  SparseTable fresh(SparseConfig(2));
  fresh.Pull(std::vector<int64_t>{4}, init4);
  t.Pull(std::vector<int64_t>{4}, r4);
  EXPECT_FLOAT_EQ(r4[0], init4[0] - 0.5f * 2.0f);
}

TEST(SparseTable, AdamKeepsStatePerRow) {
  SparseTable t(SparseConfig(1, UpdateRuleConfig::Adam(0.1f)));
  // Row 1 updated twice, row 2 once: each row's first step moves by ~lr.
  std::vector<float> before(2), after(2);
  t.Pull(std::vector<int64_t>{1, 2}, before);
  t.Push(std::vector<int64_t>{1}, std::vector<float>{1.0f});
  t.Push(std::vector<int64_t>{1, 2}, std::vector<float>{1.0f, 1.0f});
  t.Pull(std::vector<int64_t>{1, 2}, after);
  EXPECT_NEAR(before[1] - after[1], 0.1f, 1e-4);
  EXPECT_NEAR(before[0] - after[0], 0.2f, 1e-4);
}

TEST(SparseTable, DeltaAndSetAndSpanChecks) {
  SparseTable t(SparseConfig(2));
  t.Set(std::vector<int64_t>{8}, std::vector<float>{1, 2});
  t.PushDelta(std::vector<int64_t>{8, 8}, std::vector<float>{1, 1, 1, 1});
  std::vector<float> r(2);
  t.Pull(std::vector<int64_t>{8}, r);
  EXPECT_EQ(r, (std::vector<float>{3, 4}));
  EXPECT_THROW(t.Pull(std::vector<int64_t>{1, 2}, r), InvalidArgument);
}

TEST(SparseTable, ConcurrentPushesOfDisjointAndSharedKeys) {
  SparseTable t(SparseConfig(1));
  t.Set(std::vector<int64_t>{0}, std::vector<float>{0.0f});
  std::vector<std::thread> threads;
  for (int th = 0; th < 4; ++th) {
    threads.emplace_back([&, th] {
      for (int i = 0; i < 500; ++i) {
        t.PushDelta(std::vector<int64_t>{0, 1000 + th * 1000 + i}, std::vector<float>{1.0f, 0.0f});
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<float> r(1);
  t.Pull(std::vector<int64_t>{0}, r);
  EXPECT_EQ(r[0], 2000.0f);
  EXPECT_EQ(t.size(), 1 + 2000);
}

}  // namespace
}  // namespace flotilla::ps
