#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "flotilla/core/key_index.h"

namespace flotilla {
namespace {

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
}  // namespace flotilla
