#include "flotilla/io/datasets/imagenet.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "flotilla/common/error.h"
#include "flotilla/io/image.h"
#include "io/testing/temp_dir.h"

namespace flotilla::io {
namespace {

// data_dir with `n` solid-colour 20x16 JPEGs (label i % 3; value = 10 * i)
// listed in train_list.txt.
void MakeSet(const std::string& dir, int n) {
  std::filesystem::create_directories(dir + "/train");
  std::ofstream list(dir + "/train_list.txt");
  for (int i = 0; i < n; ++i) {
    Image img{16, 20, std::vector<uint8_t>(16 * 20 * 3, uint8_t(10 * i))};
    const std::string rel = "train/" + std::to_string(i) + ".jpeg";
    std::ofstream(dir + "/" + rel, std::ios::binary) << EncodeJpeg(img);
    list << rel << " " << i % 3 << "\n";
  }
}

ImageNetOptions Options(const std::string& dir) {
  ImageNetOptions o;
  o.data_dir = dir;
  o.image_size = 8;
  o.resize_short = 8;
  o.batch_size = 4;
  o.mean = {0, 0, 0};
  o.std = {1, 1, 1};
  return o;
}

TEST(ImageNetReader, BatchesEveryImageOnceInNchw) {
  testing::TempDir dir;
  MakeSet(dir.path(), 10);
  ImageNetOptions o = Options(dir.path());
  o.train = false;
  o.shuffle = false;
  ImageNetReader reader(o);
  EXPECT_EQ(reader.num_classes(), 3);
  EXPECT_EQ(reader.batches_per_epoch(), 3);
  reader.StartEpoch(0);
  std::vector<float> firsts;
  std::vector<int64_t> labels;
  while (auto b = reader.Next()) {
    EXPECT_EQ(b->image.dims()[1], 3);
    EXPECT_EQ(b->image.dims()[2], 8);
    for (int64_t i = 0; i < b->image.dims()[0]; ++i) {
      firsts.push_back(b->image.data<float>()[i * 3 * 64]);
      labels.push_back(b->label.data<int64_t>()[i]);
    }
  }
  ASSERT_EQ(firsts.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_NEAR(firsts[i], 10 * i, 3) << i;
    EXPECT_EQ(labels[i], i % 3);
  }
}

TEST(ImageNetReader, RanksReadDisjointEqualShards) {
  testing::TempDir dir;
  MakeSet(dir.path(), 11);
  std::set<int> seen;
  for (int rank = 0; rank < 2; ++rank) {
    ImageNetOptions o = Options(dir.path());
    o.rank = rank;
    o.nranks = 2;
    o.seed = 5;
    o.train = false;
    ImageNetReader reader(o);
    reader.StartEpoch(3);
    int count = 0;
    while (auto b = reader.Next()) {
      for (int64_t i = 0; i < b->image.dims()[0]; ++i, ++count) {
        seen.insert(static_cast<int>(std::lround(b->image.data<float>()[i * 3 * 64] / 10)));
      }
    }
    EXPECT_EQ(count, 5);  // 11 / 2, the odd one left out so both ranks run 2 steps
  }
  EXPECT_EQ(seen.size(), 10u);
  seen.clear();
  int total = 0;
  for (int rank = 0; rank < 2; ++rank) {  // evaluation: every image, once
    ImageNetOptions o = Options(dir.path());
    o.rank = rank, o.nranks = 2, o.train = false, o.even_shards = false;
    ImageNetReader reader(o);
    reader.StartEpoch(0);
    while (auto b = reader.Next()) {
      for (int64_t i = 0; i < b->image.dims()[0]; ++i, ++total) {
        seen.insert(static_cast<int>(std::lround(b->image.data<float>()[i * 3 * 64] / 10)));
      }
    }
  }
  EXPECT_EQ(total, 11);
  EXPECT_EQ(seen.size(), 11u);
}

TEST(ImageNetReader, BadImagesAreSkippedOrFailByPath) {
  testing::TempDir dir;
  MakeSet(dir.path(), 6);
  std::ofstream(dir / "train/2.jpeg", std::ios::binary | std::ios::trunc) << "not a jpeg";
  ImageNetOptions o = Options(dir.path());
  o.shuffle = false;
  {
    ImageNetReader reader(o);
    reader.StartEpoch(0);
    int64_t images = 0, skipped = 0;
    while (auto b = reader.Next()) images += b->image.dims()[0], skipped += b->skipped;
    EXPECT_EQ(images, 5);
    EXPECT_EQ(skipped, 1);
  }
  o.skip_bad_images = false;
  ImageNetReader reader(o);
  reader.StartEpoch(0);
  try {
    while (reader.Next()) {
    }
    ADD_FAILURE() << "a bad image did not fail the epoch";
  } catch (const Corruption& e) {
    EXPECT_NE(std::string(e.what()).find("train/2.jpeg"), std::string::npos) << e.what();
  }
}

TEST(ImageNetReader, MalformedListLineNamesFileAndLine) {
  testing::TempDir dir;
  MakeSet(dir.path(), 2);
  std::ofstream(dir / "train_list.txt", std::ios::app) << "train/9.jpeg cat\n";
  try {
    ImageNetReader reader(Options(dir.path()));
    ADD_FAILURE() << "a malformed line was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("train_list.txt:3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ImageNetReader(Options(dir / "missing")), NotFound);
}

}  // namespace
}  // namespace flotilla::io
