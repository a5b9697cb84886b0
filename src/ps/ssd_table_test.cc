// The ssd table class: rows beyond the memory budget live in RocksDB, move
// back on access, and the table behaves exactly as a memory table.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "flotilla/ps/sparse_table.h"

namespace flotilla::ps {
namespace {

constexpr int64_t kDim = 4;

struct TempDir {
  std::string path = "/tmp/flotilla_ssd_test." + std::to_string(getpid()) + "." +
                     std::to_string(counter++);
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
  static inline int counter = 0;
};

SparseTableConfig Config(SparseTableClass cls, const std::string& dir = "", SparseAccessorConfig a = {}) {
  SparseTableConfig c;
  c.name = "emb";
  c.dim = kDim;
  c.rule = MakeUpdateRule(UpdateRuleConfig::Adagrad(0.05f));
  c.initializer = InitializerConfig::Uniform(-1.0f, 1.0f, 17);
  c.num_shards = 2;
  c.accessor = a;
  c.table_class = cls;
  c.ssd_path = dir + "/live";
  // 2 shards x ~150 rows of (4 + 4) floats + 76 bytes, after the spill
  // filter (1/16) and RocksDB's smallest buffers (3 x 1 MiB).
  c.memory_budget_bytes = ((3 << 20) + 2 * 150 * (8 * 4 + 76)) * 16 / 15 + 1024;
  return c;
}

// The same random pulls and pushes on both tables.
void Train(std::vector<SparseTable*> tables, int steps, uint64_t seed, int64_t key_space = 3000) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> key(0, key_space - 1);
  for (int step = 0; step < steps; ++step) {
    std::vector<int64_t> keys(64);
    for (auto& k : keys) k = key(rng) * 13 - 700;
    std::vector<float> grads(keys.size() * kDim), out(keys.size() * kDim);
    for (auto& g : grads) g = static_cast<float>(rng() % 1000) / 1000.0f - 0.5f;
    for (SparseTable* t : tables) {
      t->Pull(keys, out);
      t->Push(keys, grads);
    }
  }
}

std::vector<float> All(SparseTable& t, int64_t key_space = 3000) {
  std::vector<int64_t> keys(key_space);
  for (int64_t i = 0; i < key_space; ++i) keys[i] = i * 13 - 700;
  std::vector<float> out(keys.size() * kDim);
  t.Pull(keys, out);
  return out;
}

TEST(SsdSparseTable, SpillsBeyondItsBudgetAndMatchesAMemoryTable) {
  TempDir dir;
  SparseTable ssd(Config(SparseTableClass::kSsd, dir.path)), mem(Config(SparseTableClass::kMemory));
  Train({&ssd, &mem}, 200, 1);
  const SparseTableCounters c = ssd.counters();
  EXPECT_EQ(c.rows, mem.size());
  EXPECT_GT(c.spilled, 1000);
  EXPECT_GT(c.loaded, 100);
  EXPECT_LE(c.memory_rows, 2 * 150 + 64);  // the budget (and at most one batch above it)
  EXPECT_EQ(All(ssd), All(mem));
  EXPECT_TRUE(std::filesystem::exists(dir.path + "/live"));
}

TEST(SsdSparseTable, SaveRestartLoadContinuesAsWithoutTheRestart) {
  TempDir dir;
  SparseTable mem(Config(SparseTableClass::kMemory));
  int64_t saved_rows = 0;
  {
    SparseTable ssd(Config(SparseTableClass::kSsd, dir.path));
    Train({&ssd, &mem}, 100, 2);
    ssd.SaveTo(dir.path + "/emb.server0-of-1.tbl");
    saved_rows = ssd.size();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path + "/live"));  // a table removes its database
  SparseTable restarted(Config(SparseTableClass::kSsd, dir.path));
  restarted.LoadFrom(dir.path + "/emb.server0-of-1.tbl");
  EXPECT_EQ(restarted.size(), mem.size());
  Train({&restarted, &mem}, 100, 3);
  EXPECT_EQ(All(restarted), All(mem));
  // The save is still whole after the restarted table changed its rows.
  SparseTable again(Config(SparseTableClass::kSsd, dir.path + "2"));
  again.LoadFrom(dir.path + "/emb.server0-of-1.tbl");
  EXPECT_EQ(again.size(), saved_rows);
  EXPECT_LT(saved_rows, restarted.size());
}

TEST(SsdSparseTable, LoadsTheSavesOfAnotherNumberOfServers) {
  TempDir dir;
  SparseTable mem(Config(SparseTableClass::kMemory));
  std::vector<std::string> saves;
  for (int s = 0; s < 2; ++s) {  // two servers, keys split by parity
    SparseTable part(Config(SparseTableClass::kSsd, dir.path + "/s" + std::to_string(s)));
    std::vector<int64_t> keys;
    for (int64_t k = s; k < 600; k += 2) keys.push_back(k);
    std::vector<float> out(keys.size() * kDim), g(keys.size() * kDim, 0.25f);
    part.Pull(keys, out);
    part.Push(keys, g);
    mem.Pull(keys, out);
    mem.Push(keys, g);
    saves.push_back(dir.path + "/emb.server" + std::to_string(s) + "-of-2.tbl");
    part.SaveTo(saves.back());
  }
  SparseTable one(Config(SparseTableClass::kSsd, dir.path + "/one"));
  one.LoadResharded(saves, [](int64_t) { return true; }, "two saves");
  EXPECT_EQ(one.size(), 600);
  EXPECT_EQ(All(one, 600), All(mem, 600));
}

TEST(SsdSparseTable, ShrinkDropsStaleRowsOnDiskToo) {
  TempDir dir;
  SparseTable ssd(Config(SparseTableClass::kSsd, dir.path, {.delete_after_unseen_passes = 1}));
  std::vector<int64_t> old_keys, new_keys;
  for (int64_t k = 0; k < 1000; ++k) old_keys.push_back(k);
  for (int64_t k = 5000; k < 5100; ++k) new_keys.push_back(k);
  std::vector<float> out(1000 * kDim);
  for (size_t first = 0; first < old_keys.size(); first += 50) {  // most of them spill
    ssd.Pull(std::span<const int64_t>(old_keys).subspan(first, 50), std::span<float>(out).first(50 * kDim));
  }
  EXPECT_GT(ssd.counters().spilled, 500);
  EXPECT_EQ(ssd.Shrink(), 0);
  ssd.Pull(new_keys, std::span<float>(out).first(100 * kDim));
  EXPECT_EQ(ssd.Shrink(), 1000);  // the old keys, in memory and on disk
  EXPECT_EQ(ssd.size(), 100);
}

}  // namespace
}  // namespace flotilla::ps
