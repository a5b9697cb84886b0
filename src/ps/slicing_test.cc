#include <gtest/gtest.h>

#include <map>

#include "flotilla/common/error.h"
#include "flotilla/ps/slicing.h"

namespace flotilla::ps {
namespace {

// Blocks tile [0, numel) in order without gaps.
void ExpectTiles(const std::vector<DenseBlock>& blocks, int64_t numel, int num_servers) {
  int64_t next = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_EQ(blocks[i].id, static_cast<int>(i));
    EXPECT_EQ(blocks[i].offset, next);
    EXPECT_GT(blocks[i].length, 0);
    EXPECT_GE(blocks[i].server, 0);
    EXPECT_LT(blocks[i].server, num_servers);
    next += blocks[i].length;
  }
  EXPECT_EQ(next, numel);
}

TEST(SliceDense, GridOfSizesAndServers) {
  for (int servers = 1; servers <= 5; ++servers) {
    for (int64_t numel : {0, 1, 13, 8191, 8192, 8193, 16384, 100000, 1000003}) {
      auto blocks = SliceDense("w", numel, servers);
      ExpectTiles(blocks, numel, servers);
      EXPECT_LE(static_cast<int>(blocks.size()), servers);
      for (size_t i = 0; i + 1 < blocks.size(); ++i) EXPECT_GE(blocks[i].length, kMinBlockSize);
    }
  }
}

TEST(SliceDense, PaddleBlockSizes) {
  // 100000 over 3 servers: ceil(100000/3) = 33334 per block.
  auto blocks = SliceDense("w", 100000, 3);
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].length, 33334);
  EXPECT_EQ(blocks[2].length, 100000 - 2 * 33334);
  // 20000 elements allow only 2 blocks of >= 8192 although 4 servers exist.
  EXPECT_EQ(SliceDense("w", 20000, 4).size(), 2u);
  // Small parameters stay whole.
  EXPECT_EQ(SliceDense("b", 13, 4).size(), 1u);
}

TEST(SliceDense, RoundRobinOverServers) {
  auto blocks = SliceDense("emb", 4 * 10000, 4);
  ASSERT_EQ(blocks.size(), 4u);
  for (size_t i = 1; i < blocks.size(); ++i) {
    EXPECT_EQ(blocks[i].server, (blocks[0].server + static_cast<int>(i)) % 4);
  }
}

TEST(SliceDense, BlocksHoldWholeRows) {
  auto blocks = SliceDense("fc", 1000 * 30, 3, /*row_width=*/30);
  ExpectTiles(blocks, 30000, 3);
  for (const auto& b : blocks) {
    EXPECT_EQ(b.offset % 30, 0);
    EXPECT_EQ(b.length % 30, 0);
  }
}

TEST(SliceDense, SmallParametersSpreadOverServers) {
  std::map<int, int> per_server;
  for (int i = 0; i < 40; ++i) per_server[SliceDense("p" + std::to_string(i), 10, 4)[0].server]++;
  EXPECT_EQ(per_server.size(), 4u);
}

TEST(SliceDense, RejectsBadArguments) {
  EXPECT_THROW(SliceDense("w", 10, 0), InvalidArgument);
  EXPECT_THROW(SliceDense("w", -1, 2), InvalidArgument);
  EXPECT_THROW(SliceDense("w", 10, 2, 0), InvalidArgument);
}

TEST(Slicers, ModAndHashStayInRange) {
  EXPECT_EQ(ModSlicer(7, 3), 1);
  EXPECT_EQ(ModSlicer(-1, 3), 2);
  std::map<int, int> hist;
  for (int64_t k = 0; k < 3000; k += 3) {
    int s = HashSlicer(k, 3);
    ASSERT_GE(s, 0);
    ASSERT_LT(s, 3);
    hist[s]++;
  }
  // Keys with stride 3 all land on one server under mod; hashing spreads them.
  EXPECT_EQ(hist.size(), 3u);
}

}  // namespace
}  // namespace flotilla::ps
