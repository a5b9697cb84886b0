// Row admission and eviction (the accessor rules of SparseTable).
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "flotilla/common/error.h"
#include "flotilla/ps/sparse_table.h"

namespace flotilla::ps {
namespace {

constexpr int64_t kDim = 3;

SparseTableConfig Config(SparseAccessorConfig accessor) {
  SparseTableConfig c;
  c.name = "emb";
  c.dim = kDim;
  c.rule = MakeUpdateRule(UpdateRuleConfig::Adagrad(0.1f));
  c.initializer = InitializerConfig::Uniform(-1.0f, 1.0f, 5);
  c.num_shards = 4;
  c.accessor = accessor;
  return c;
}

std::vector<float> PullOne(SparseTable& t, int64_t key) {
  std::vector<float> out(kDim);
  t.Pull(std::vector<int64_t>{key}, out);
  return out;
}

// A gradient row followed by the key's show and click counts.
void PushOne(SparseTable& t, int64_t key, float show = 1, float click = 0) {
  std::vector<float> g(kDim, 0.5f);
  g.push_back(show);
  g.push_back(click);
  t.Push(std::vector<int64_t>{key}, g);
}

TEST(SparseAccessor, AKeySeenFewerThanNTimesNeverGetsARow) {
  SparseTable table(Config({.admit_count = 3})), plain(Config({}));
  const std::vector<float> zeros(kDim, 0.0f);
  for (int sighting = 1; sighting <= 2; ++sighting) {
    EXPECT_EQ(PullOne(table, 42), zeros) << "sighting " << sighting;
    PushOne(table, 42);  // no row: the gradient is dropped
    EXPECT_EQ(table.size(), 0);
  }
  // The third sighting admits it, with the initializer's values (as a table
  // without admission gives it: the dropped pushes left no trace).
  EXPECT_EQ(PullOne(table, 42), PullOne(plain, 42));
  EXPECT_EQ(table.size(), 1);
  PushOne(table, 42);
  plain.Push(std::vector<int64_t>{42}, std::vector<float>(kDim, 0.5f));  // no statistics kept
  EXPECT_EQ(PullOne(table, 42), PullOne(plain, 42));
  EXPECT_THROW(plain.Push(std::vector<int64_t>{42}, std::vector<float>(kDim + 2, 0.5f)), InvalidArgument);
  // Keys pulled in one batch count once each; other keys are untouched.
  std::vector<float> out(4 * kDim);
  table.Pull(std::vector<int64_t>{7, 8, 7, 42}, out);
  EXPECT_EQ(table.size(), 1);
  const SparseTableCounters c = table.counters();
  EXPECT_EQ(c.admitted, 1);
  EXPECT_EQ(c.refused_sightings, 2 + 3);
  EXPECT_EQ(c.dropped_pushes, 2);
  EXPECT_EQ(c.candidates, 2);  // 7 (seen twice) and 8 (once)
}

TEST(SparseAccessor, AdmissionByProbabilityAdmitsThatShareOfKeys) {
  SparseTable table(Config({.admit_probability = 0.25f}));
  std::vector<int64_t> keys(4000);
  for (int64_t i = 0; i < 4000; ++i) keys[i] = i * 7 + 1;
  std::vector<float> out(keys.size() * kDim);
  table.Pull(keys, out);
  // Binomial(4000, 0.25): mean 1000, sd 27.
  EXPECT_GT(table.size(), 880);
  EXPECT_LT(table.size(), 1120);
  EXPECT_EQ(table.counters().admitted + table.counters().refused_sightings, 4000);
}

TEST(SparseAccessor, RowsUnseenForDPassesAreGoneAfterShrink) {
  SparseTable table(Config({.delete_after_unseen_passes = 2}));
  std::vector<float> out(3 * kDim);
  table.Pull(std::vector<int64_t>{1, 2, 3}, out);  // pass 0: all seen
  EXPECT_EQ(table.Shrink(), 0);
  PullOne(table, 1);                               // pass 1: 1 seen
  PushOne(table, 3);                               // a push is a sighting too
  EXPECT_EQ(table.Shrink(), 0);                    // 2 unseen for one pass only
  EXPECT_EQ(table.StatsOf(2)->unseen_passes, 1);
  EXPECT_EQ(table.Shrink(), 1);                    // pass 2: nothing seen; 2 unseen for 2 passes
  EXPECT_FALSE(table.StatsOf(2).has_value());
  EXPECT_EQ(table.size(), 2);
  EXPECT_EQ(table.Shrink(), 2);                    // pass 3: 1 and 3 unseen for 2 passes
  EXPECT_EQ(table.size(), 0);
  EXPECT_EQ(table.counters().shrunk, 3);
}

TEST(SparseAccessor, ShrinkDropsRowsScoredBelowTheThresholdAfterDecay) {
  // score = 0.1 (show - click) + 1 click; decay 0.5 per shrink.
  SparseTable table(Config({.delete_threshold = 0.5f, .show_click_decay_rate = 0.5f}));
  PullOne(table, 10);
  PullOne(table, 20);
  PullOne(table, 30);
  PushOne(table, 10, /*show=*/20, /*click=*/0);  // 20 * 0.5 * 0.1 = 1.0: kept
  PushOne(table, 20, /*show=*/2, /*click=*/2);   // 2 * 0.5 = 1.0: kept
  PushOne(table, 30, /*show=*/8, /*click=*/0);   // 8 * 0.5 * 0.1 = 0.4: dropped
  EXPECT_EQ(table.Shrink(), 1);
  EXPECT_FLOAT_EQ(table.StatsOf(10)->show, 10.0f);
  EXPECT_FLOAT_EQ(table.StatsOf(20)->click, 1.0f);
  EXPECT_FALSE(table.StatsOf(30).has_value());
  EXPECT_EQ(table.Shrink(), 0);  // decayed to scores 0.5 and 0.5: kept
  EXPECT_EQ(table.Shrink(), 2);  // 0.25 and 0.25
}

TEST(SparseAccessor, SaveAndLoadKeepStatisticsAndThePassCount) {
  const std::string dir = "/tmp/flotilla_accessor_test." + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  SparseAccessorConfig a{.admit_count = 2, .delete_after_unseen_passes = 2};
  SparseTable table(Config(a));
  PullOne(table, 5);
  PullOne(table, 5);  // admitted
  PushOne(table, 5, 3, 1);
  table.Shrink();
  table.SaveTo(dir + "/emb.tbl");
  SparseTable loaded(Config(a));
  loaded.LoadFrom(dir + "/emb.tbl");
  EXPECT_EQ(PullOne(loaded, 5), PullOne(table, 5));
  EXPECT_FLOAT_EQ(loaded.StatsOf(5)->show, 3.0f);
  EXPECT_FLOAT_EQ(loaded.StatsOf(5)->click, 1.0f);
  EXPECT_EQ(loaded.Shrink(), 0);  // seen in pass 1 (the pull above)
  EXPECT_EQ(loaded.Shrink(), 0);
  EXPECT_EQ(loaded.Shrink(), 1);  // the pass count came back with the rows
  // A table saved without statistics does not load into one that keeps them.
  SparseTable plain(Config({}));
  PullOne(plain, 5);
  plain.SaveTo(dir + "/plain.tbl");
  EXPECT_THROW(loaded.LoadFrom(dir + "/plain.tbl"), Corruption);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace flotilla::ps
