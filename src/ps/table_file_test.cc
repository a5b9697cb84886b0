#include <gtest/gtest.h>
#include <unistd.h>

#include "flotilla/common/error.h"
#include "flotilla/common/file_util.h"
#include "ps/table_file.h"

namespace flotilla::ps {
namespace {

class TableFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "flotilla_table_file_" + std::to_string(::getpid());
    RemoveAll(dir_);
    MakeDirs(dir_);
  }
  void TearDown() override { RemoveAll(dir_); }
  std::string dir_;
};

TEST_F(TableFileTest, RoundTripAndName) {
  const std::string path = TableFileName(dir_, "fc_0.w/0", 1, 2);
  EXPECT_EQ(path, dir_ + "/fc_0.w_0.server1-of-2.tbl");
  WriteTableFile(path, TableKind::kDense, "payload bytes");
  EXPECT_EQ(ReadTableFile(path, TableKind::kDense), "payload bytes");
  EXPECT_THROW(ReadTableFile(path, TableKind::kSparse), Corruption);
  EXPECT_THROW(ReadTableFile(dir_ + "/missing.tbl", TableKind::kDense), NotFound);
}

TEST_F(TableFileTest, FlippedByteTruncationAndGarbageNameTheFile) {
  const std::string path = TableFileName(dir_, "emb", 0, 1);
  WriteTableFile(path, TableKind::kSparse, std::string(1000, 'x'));
  const std::string good = ReadFile(path);
  auto expect_corrupt = [&](const std::string& data, const std::string& why) {
    WriteFileAtomic(path, data);
    try {
      ReadTableFile(path, TableKind::kSparse);
      ADD_FAILURE() << "no error for " << why;
    } catch (const Corruption& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  };
  std::string flipped = good;
  flipped[500] ^= 0x1;
  expect_corrupt(flipped, "flipped byte");
  expect_corrupt(good.substr(0, good.size() - 10), "truncated");
  expect_corrupt(good.substr(0, 5), "shorter than header");
  expect_corrupt("not a table file at all, just some text...", "garbage");
}

TEST_F(TableFileTest, SavedSetsOfAnyServerCount) {
  EXPECT_THROW(SavedTableFiles(dir_, "w"), NotFound);
  for (int i = 0; i < 3; ++i) WriteTableFile(TableFileName(dir_, "w", i, 3), TableKind::kDense, "x");
  WriteTableFile(TableFileName(dir_, "w2", 0, 1), TableKind::kDense, "other table");
  EXPECT_EQ(SavedTableFiles(dir_, "w"),
            (std::vector<std::string>{TableFileName(dir_, "w", 0, 3), TableFileName(dir_, "w", 1, 3),
                                      TableFileName(dir_, "w", 2, 3)}));
  RemoveAll(TableFileName(dir_, "w", 1, 3));
  EXPECT_THROW(SavedTableFiles(dir_, "w"), Corruption);  // a server's file is missing
  WriteTableFile(TableFileName(dir_, "w", 1, 3), TableKind::kDense, "x");
  WriteTableFile(TableFileName(dir_, "w", 0, 2), TableKind::kDense, "x");
  EXPECT_THROW(SavedTableFiles(dir_, "w"), Corruption);  // two saves mixed
}

}  // namespace
}  // namespace flotilla::ps
