#include <gtest/gtest.h>

#include <cstdint>
#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "flotilla/common/error.h"
#include "flotilla/core/selected_rows.h"

namespace flotilla {
namespace {

// rows with values row i = {i, 10 * i} summed per row in input order.
SelectedRows Make(const std::vector<int64_t>& rows, int64_t height) {
  Tensor value(DType::kFloat32, {static_cast<int64_t>(rows.size()), 2});
  float* v = value.mutable_data<float>();
  for (size_t i = 0; i < rows.size(); ++i) {
    v[2 * i] = static_cast<float>(i) + 0.25f;
    v[2 * i + 1] = 10.0f * static_cast<float>(i) - 3.0f;
  }
  return SelectedRows(rows, std::move(value), height);
}

void ExpectMergedLikeReference(const std::vector<int64_t>& rows, int64_t height) {
  SelectedRows in = Make(rows, height);
  std::map<int64_t, std::vector<float>> want;  // sorted; sums in input order
  for (size_t i = 0; i < rows.size(); ++i) {
    auto& w = want[rows[i]];
    w.resize(2, 0.0f);
    w[0] += in.value().data<float>()[2 * i];
    w[1] += in.value().data<float>()[2 * i + 1];
  }
  SelectedRows out = in.MergeRows();
  ASSERT_EQ(out.rows().size(), want.size());
  ASSERT_EQ(out.value().dim(0), static_cast<int64_t>(want.size()));
  EXPECT_EQ(out.height(), height);
  size_t k = 0;
  for (const auto& [row, sum] : want) {
    ASSERT_EQ(out.rows()[k], row) << "at " << k;
    EXPECT_EQ(out.value().data<float>()[2 * k], sum[0]) << "row " << row;
    EXPECT_EQ(out.value().data<float>()[2 * k + 1], sum[1]) << "row " << row;
    ++k;
  }
}

TEST(SelectedRowsMerge, SortsAndSumsRepeatsWithinTheHeight) {
  ExpectMergedLikeReference({7, 3, 7, 0, 3, 3, 99}, 100);
}

TEST(SelectedRowsMerge, RowsOutsideAKnownHeightStillMerge) {
  // Height 0 (a PS push) or rows beyond it take the sorting path.
  ExpectMergedLikeReference({-5, 1LL << 40, -5, 2, 1LL << 40}, 0);
  ExpectMergedLikeReference({4, 200, 4}, 10);
}

TEST(SelectedRowsMerge, EmptyGivesEmpty) { ExpectMergedLikeReference({}, 100); }

TEST(SelectedRowsMerge, RandomBatchesAgreeOnBothPaths) {
  std::mt19937_64 rng(3);
  for (int64_t height : std::vector<int64_t>{64, 1000, 100000, int64_t{1} << 30}) {
    std::uniform_int_distribution<int64_t> pick(0, std::min<int64_t>(height, 5000) - 1);
    std::vector<int64_t> rows(3000);
    for (int64_t& r : rows) r = pick(rng);
    ExpectMergedLikeReference(rows, height);
  }
}

TEST(SelectedRowsMerge, IntegerOverflowIsRefused) {
  Tensor value(DType::kInt32, {2, 1});
  value.mutable_data<int32_t>()[0] = INT32_MAX;
  value.mutable_data<int32_t>()[1] = 1;
  SelectedRows in({5, 5}, std::move(value), 10);
  EXPECT_THROW(in.MergeRows(), Error);
}

}  // namespace
}  // namespace flotilla
