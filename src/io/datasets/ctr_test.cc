#include "flotilla/io/datasets/ctr.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "flotilla/common/error.h"

namespace flotilla::io::ctr {
namespace {

TEST(CtrAuc, PerfectReversedAndTiedScores) {
  EXPECT_DOUBLE_EQ(Auc({0.1f, 0.2f, 0.8f, 0.9f}, {0, 0, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(Auc({0.9f, 0.8f, 0.2f, 0.1f}, {0, 0, 1, 1}), 0.0);
  EXPECT_DOUBLE_EQ(Auc({0.5f, 0.5f, 0.5f, 0.5f}, {0, 1, 0, 1}), 0.5);
  // One positive above one of two negatives: 1 of 2 pairs.
  EXPECT_DOUBLE_EQ(Auc({0.1f, 0.3f, 0.2f}, {0, 0, 1}), 0.5);
  EXPECT_DOUBLE_EQ(Auc({0.1f, 0.2f}, {1, 1}), 0.5);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_DOUBLE_EQ(Auc({nan, 0.2f, nan, 0.9f}, {0, 0, 1, 1}), 0.625);  // NaN ranks lowest, ties count half
}

TEST(CtrGenerator, DeterministicPowerLawIdsAndInformativeTruth) {
  CtrGenerator a({}, 3), b({}, 3), c({}, 4);
  CtrBatch x = a.Next(4000), y = b.Next(4000), z = c.Next(10);
  ASSERT_EQ(x.size(), 4000);
  for (int64_t i = 0; i < x.ids.numel(); ++i) ASSERT_EQ(x.ids.data<int64_t>()[i], y.ids.data<int64_t>()[i]);
  EXPECT_NE(x.dense.data<float>()[0], z.dense.data<float>()[0]);
  // Slot 0's ids: in range, many distinct (a power law over a million ids),
  // but the most frequent id recurs far more often than uniform draws would.
  std::map<int64_t, int> count;
  for (int64_t i = 0; i < 4000; ++i) {
    int64_t id = x.ids.data<int64_t>()[i * kSlots];
    ASSERT_GE(id, 0);
    ASSERT_LT(id, 1'000'000);
    ++count[id];
  }
  int top = 0;
  for (auto& [id, n] : count) top = std::max(top, n);
  EXPECT_GT(count.size(), 500u);
  EXPECT_GT(top, 100);
  std::vector<float> labels(x.label.data<float>(), x.label.data<float>() + x.size());
  double bayes = Auc(x.truth, labels);
  EXPECT_GT(bayes, 0.75);
  EXPECT_LT(bayes, 0.99);
}

TEST(CriteoReader, ParsesLinesWithEmptyFieldsAndNamesBadLines) {
  std::string line = "1\t5\t\t3";
  for (int j = 3; j < kDenseFeatures; ++j) line += "\t1";
  line += "\t68fd1e64";
  for (int s = 1; s < kSlots; ++s) line += s == 1 ? "\t" : "\t0a1b2c3d";
  std::istringstream in(line + "\n" + line + "\nbad\tline\n");
  int64_t n = 0;
  auto b = ReadCriteo(in, 2, {.vocab_per_slot = 1000}, &n);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->size(), 2);
  EXPECT_EQ(b->label.data<float>()[0], 1.0f);
  EXPECT_NEAR(b->dense.data<float>()[0], std::log1p(5.0), 1e-6);
  EXPECT_EQ(b->dense.data<float>()[1], 0.0f);
  EXPECT_EQ(b->ids.data<int64_t>()[1], 1000);  // empty slot 1 → its id 0
  EXPECT_GE(b->ids.data<int64_t>()[2], 2000);
  EXPECT_LT(b->ids.data<int64_t>()[2], 3000);
  try {
    ReadCriteo(in, 2, {.vocab_per_slot = 1000}, &n);
    FAIL() << "a 2-field line was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(ReadCriteo(in, 2, {}, &n).has_value());
}

}  // namespace
}  // namespace flotilla::io::ctr
