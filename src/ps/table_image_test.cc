#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "flotilla/common/error.h"
#include "flotilla/ps/dense_table.h"
#include "flotilla/ps/sparse_table.h"
#include "ps/table_test_util.h"

namespace flotilla::ps {
namespace {

using table_testing::DenseConfig;
using table_testing::SparseConfig;

// Tables serialise to an image that restores them exactly, and refuse an
// image of another update rule or a truncated one.
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

}  // namespace
}  // namespace flotilla::ps
