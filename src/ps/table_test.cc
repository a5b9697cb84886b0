#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "flotilla/common/error.h"
#include "flotilla/ps/dense_table.h"
#include "flotilla/ps/sparse_table.h"
#include "ps/key_index.h"
#include "flotilla/ps/slicing.h"

namespace flotilla::ps {
namespace {

DenseTableConfig DenseConfig(int64_t numel, UpdateRuleConfig rule = UpdateRuleConfig::Sgd(0.5f)) {
  DenseTableConfig c;
  c.name = "w";
  c.numel = numel;
  c.rule = MakeUpdateRule(rule);
  c.initializer = InitializerConfig::Constant(1.0f);
  return c;
}

SparseTableConfig SparseConfig(int64_t dim, UpdateRuleConfig rule = UpdateRuleConfig::Sgd(0.5f)) {
  SparseTableConfig c;
  c.name = "emb";
  c.dim = dim;
  c.rule = MakeUpdateRule(rule);
  c.initializer = InitializerConfig::Uniform(-1.0f, 1.0f, 9);
  c.num_shards = 4;
  return c;
}

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

// Saved by 2 servers, loaded by 3 (and back): every value and every bit of
// Adam state lands where the new slicing puts it, so training continues
// exactly as it would have.
TEST(DenseTable, ResliceForAnotherServerCount) {
  const int64_t numel = 30000;
  const auto adam = UpdateRuleConfig::Adam(0.01f);
  auto grad_of = [](int64_t i, int step) { return std::sin(0.001f * i + step); };
  auto make = [&](int n) {
    std::vector<std::unique_ptr<DenseTable>> t;
    for (int s = 0; s < n; ++s) t.push_back(std::make_unique<DenseTable>(DenseConfig(numel, adam), s, n));
    return t;
  };
  auto step = [&](std::vector<std::unique_ptr<DenseTable>>& tables, int k) {
    for (auto& t : tables) {
      for (const auto& b : t->blocks()) {
        std::vector<float> g(b.length);
        for (int64_t i = 0; i < b.length; ++i) g[i] = grad_of(b.offset + i, k);
        t->Push(b.id, g);
      }
    }
  };
  auto values = [&](std::vector<std::unique_ptr<DenseTable>>& tables) {
    std::vector<float> all(numel);
    for (auto& t : tables) {
      for (const auto& b : t->blocks()) t->Pull(b.id, std::span<float>(all).subspan(b.offset, b.length));
    }
    return all;
  };
  for (auto [from, to] : {std::pair{2, 3}, std::pair{3, 2}}) {
    auto old_tables = make(from), new_tables = make(to);
    for (int k = 0; k < 3; ++k) step(old_tables, k);
    std::vector<std::string> images;
    for (auto& t : old_tables) images.push_back(t->Serialize());
    for (auto& t : new_tables) t->DeserializeResliced(images, "images");
    EXPECT_EQ(values(new_tables), values(old_tables)) << from << " -> " << to;
    step(old_tables, 3);
    step(new_tables, 3);
    EXPECT_EQ(values(new_tables), values(old_tables)) << "Adam state after " << from << " -> " << to;
  }
  std::vector<std::string> partial{make(2)[0]->Serialize()};
  EXPECT_THROW(make(3)[0]->DeserializeResliced(partial, "half a save"), Corruption);
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

TEST(DenseTable, ServersHoldDisjointBlocksCoveringTheParameter) {
  const int64_t numel = 30000;
  int64_t covered = 0;
  for (int s = 0; s < 3; ++s) {
    DenseTable t(DenseConfig(numel), s, 3);
    for (const auto& b : t.blocks()) {
      EXPECT_EQ(b.server, s);
      covered += b.length;
    }
  }
  EXPECT_EQ(covered, numel);
}

TEST(DenseTable, PushPullAccumulateDeltaSet) {
  DenseTable t(DenseConfig(4), 0, 1);
  ASSERT_EQ(t.blocks().size(), 1u);
  std::vector<float> v(4), g{1, 2, 3, 4};
  t.Push(0, g);  // 1 - 0.5 g
  t.Pull(0, v);
  EXPECT_EQ(v, (std::vector<float>{0.5f, 0.0f, -0.5f, -1.0f}));
  t.Accumulate(0, g);
  t.Accumulate(0, g);
  t.Pull(0, v);
  EXPECT_EQ(v[0], 0.5f);  // nothing applied before ApplyPending
  t.ApplyPending(2);      // mean of two pushes of g
  t.Pull(0, v);
  EXPECT_EQ(v, (std::vector<float>{0.0f, -1.0f, -2.0f, -3.0f}));
  t.ApplyPending(2);  // nothing pending: no change
  t.PushDelta(0, g);
  t.Pull(0, v);
  EXPECT_EQ(v, (std::vector<float>{1.0f, 1.0f, 1.0f, 1.0f}));
  t.Set(0, std::vector<float>{9, 9, 9, 9});
  t.Pull(0, v);
  EXPECT_EQ(v[3], 9.0f);
}

TEST(DenseTable, RejectsUnknownBlockAndWrongLength) {
  DenseTable t(DenseConfig(4), 0, 1);
  std::vector<float> v(3), four(4);
  EXPECT_THROW(t.Pull(1, four), NotFound);
  EXPECT_THROW(t.Pull(0, v), InvalidArgument);
  EXPECT_THROW(t.Push(0, v), InvalidArgument);
}

TEST(DenseTable, ZeroElementsHaveNoBlocks) {
  DenseTable t(DenseConfig(0), 0, 2);
  EXPECT_TRUE(t.blocks().empty());
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

TEST(Tables, SerializeRoundTripAndMismatch) {
  DenseTable d(DenseConfig(20000, UpdateRuleConfig::Adam(0.1f)), 1, 2);
  for (const auto& b : d.blocks()) d.Push(b.id, std::vector<float>(b.length, 1.0f));
  DenseTable d2(DenseConfig(20000, UpdateRuleConfig::Adam(0.1f)), 1, 2);
  d2.Deserialize(d.Serialize(), "image");
  EXPECT_EQ(d2.Serialize(), d.Serialize());
  DenseTable sgd(DenseConfig(20000), 1, 2);
  EXPECT_THROW(sgd.Deserialize(d.Serialize(), "image"), Corruption);

  SparseTable s(SparseConfig(4, UpdateRuleConfig::Adagrad(0.1f)));
  s.Push(std::vector<int64_t>{1, 2}, std::vector<float>(8, 1.0f));
  SparseTable s2(SparseConfig(4, UpdateRuleConfig::Adagrad(0.1f)));
  s2.Deserialize(s.Serialize(), "image");
  EXPECT_EQ(s2.Serialize(), s.Serialize());
  EXPECT_EQ(s2.size(), 2);
  std::string image = s.Serialize();
  image.resize(image.size() - 3);
  EXPECT_THROW(s2.Deserialize(image, "image"), Corruption);
}

TEST(KeyIndex, FindsEveryInsertedKeyAcrossGrowth) {
  KeyIndex index;
  const std::vector<int64_t> strides{1, 64, 1 << 20, -7};
  uint32_t next = 0;
  for (int64_t stride : strides) {
    for (int64_t i = 0; i < 3000; ++i) {
      auto [slot, inserted] = index.FindOrInsert(i * stride + stride * 100000, next);
      ASSERT_TRUE(inserted);
      ASSERT_EQ(slot, next++);
    }
  }
  EXPECT_EQ(index.size(), next);
  uint32_t want = 0;
  for (int64_t stride : strides) {
    for (int64_t i = 0; i < 3000; ++i) {
      auto [slot, inserted] = index.FindOrInsert(i * stride + stride * 100000, 999999);
      ASSERT_FALSE(inserted);
      ASSERT_EQ(slot, want++);
    }
  }
}

// Probe homes (low bits) and shards (high bits) spread ids that share
// their low bits and differ only high up, as slot-tagged feature ids do.
TEST(KeyIndex, HashSpreadsIdsThatDifferOnlyInHighBits) {
  std::vector<int> home(1024), shard(16);
  for (int64_t slot = 0; slot < 32; ++slot) {
    for (int64_t id = 0; id < 64; ++id) {
      const uint64_t h = KeyIndex::Hash((slot << 48) | (id << 2));
      ++home[h & 1023];
      ++shard[(h >> 32) * 16 >> 32];
    }
  }
  // 2048 keys: 2 per home and 128 per shard on average.
  EXPECT_LE(*std::max_element(home.begin(), home.end()), 10);
  EXPECT_GE(*std::min_element(shard.begin(), shard.end()), 64);
  EXPECT_LE(*std::max_element(shard.begin(), shard.end()), 192);
}

}  // namespace
}  // namespace flotilla::ps
