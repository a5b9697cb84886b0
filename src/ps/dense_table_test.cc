#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "flotilla/common/error.h"
#include "flotilla/ps/dense_table.h"
#include "flotilla/ps/slicing.h"
#include "ps/table_test_util.h"

namespace flotilla::ps {
namespace {

using table_testing::DenseConfig;

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

}  // namespace
}  // namespace flotilla::ps
