#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "flotilla/core/selected_rows.h"
#include "flotilla/core/tensor.h"

namespace flotilla {
namespace {

TEST(Tensor, AllocatesAlignedAndReusesBuffer) {
  Tensor t(DType::kFloat32, {4, 8});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u);
  const void* before = t.raw_data();
  t.Resize({2, 8});
  EXPECT_EQ(t.mutable_data<float>(), before);
  t.Resize({16, 8});
  EXPECT_NE(t.mutable_data<float>(), before);
}

TEST(Tensor, CopySharesCloneDoesNot) {
  auto t = Tensor::FromVector<int64_t>({1, 2, 3, 4}, {2, 2});
  Tensor shared = t;
  Tensor deep = t.Clone();
  t.data<int64_t>()[0] = 9;
  EXPECT_EQ(shared.data<int64_t>()[0], 9);
  EXPECT_EQ(deep.data<int64_t>()[0], 1);
}

TEST(Tensor, WrongTypeAndUninitialisedThrow) {
  Tensor t(DType::kFloat64, {3});
  EXPECT_THROW(t.data<float>(), InvalidArgument);
  Tensor empty;
  empty.Resize({2});
  EXPECT_THROW(empty.raw_data(), InvalidArgument);
  EXPECT_THROW(t.Reshape({4}), InvalidArgument);
}

TEST(Tensor, SliceIsAView) {
  auto t = Tensor::FromVector<float>({0, 1, 2, 3, 4, 5}, {3, 2});
  Tensor s = t.Slice(1, 3);
  EXPECT_EQ(s.dims(), (Dims{2, 2}));
  EXPECT_EQ(s.data<float>()[0], 2.0f);
  s.data<float>()[0] = 7;
  EXPECT_EQ(t.data<float>()[2], 7.0f);
}

TEST(Tensor, WrapsExternalMemoryWithoutWritingIt) {
  std::vector<float> owner = {1, 2, 3, 4, 5, 6};
  int released = 0;
  {
    auto buffer = std::make_shared<Buffer>(owner.data(), owner.size() * sizeof(float),
                                           [&released] { ++released; });
    Tensor t = Tensor::Wrap(buffer, DType::kFloat32, {2, 3});
    EXPECT_EQ(t.data<float>(), owner.data());
    EXPECT_EQ(t.data<float>()[4], 5.0f);
    Tensor out = t;
    float* fresh = out.mutable_data<float>();  // asked to write: gets memory of its own
    EXPECT_NE(fresh, owner.data());
    fresh[0] = 9;
    EXPECT_EQ(owner[0], 1.0f);
    EXPECT_THROW(Tensor::Wrap(buffer, DType::kFloat32, {2, 4}), InvalidArgument);
    EXPECT_EQ(released, 0);
  }
  EXPECT_EQ(released, 1);
}

TEST(SelectedRows, MergeAndDense) {
  auto v = Tensor::FromVector<float>({1, 1, 2, 2, 3, 3}, {3, 2});
  SelectedRows sr({4, 1, 4}, v, 6);
  auto merged = sr.MergeRows();
  EXPECT_EQ(merged.rows(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(merged.value().ToVector<float>(), (std::vector<float>{2, 2, 4, 4}));
  auto dense = sr.ToDense();
  EXPECT_EQ(dense.dims(), (Dims{6, 2}));
  EXPECT_EQ(dense.data<float>()[8], 4.0f);
  EXPECT_EQ(dense.data<float>()[0], 0.0f);
}

// Integer values may come from a tensor file or a sparse push: duplicate rows
// whose sum overflows are refused, naming the row, instead of wrapping.
TEST(SelectedRows, IntegerSumsThatOverflowAreRefused) {
  const int64_t big = std::numeric_limits<int64_t>::max() - 1;
  SelectedRows sr({3, 1, 3}, Tensor::FromVector<int64_t>({big, 5, 2}, {3, 1}), 4);
  for (auto sum : {+[](const SelectedRows& s) { s.ToDense(); },
                   +[](const SelectedRows& s) { s.MergeRows(); }}) {
    try {
      sum(sr);
      ADD_FAILURE() << "an int64 sum past INT64_MAX was not refused";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("int64 values of row 3 overflows"), std::string::npos)
          << e.what();
    }
  }
  SelectedRows narrow({0, 0}, Tensor::FromVector<int32_t>({-2147483647, -2}, {2, 1}), 1);
  EXPECT_THROW(narrow.ToDense(), InvalidArgument);
  EXPECT_THROW(narrow.MergeRows(), InvalidArgument);

  SelectedRows fits({2, 2}, Tensor::FromVector<int64_t>({big, -big - 1}, {2, 1}), 3);
  EXPECT_EQ(fits.ToDense().ToVector<int64_t>(), (std::vector<int64_t>{0, 0, -1}));
  EXPECT_EQ(fits.MergeRows().value().ToVector<int64_t>(), (std::vector<int64_t>{-1}));
}

}  // namespace
}  // namespace flotilla

namespace flotilla {
namespace {

TEST(LoD, LengthsAndOffsetsRoundTrip) {
  const LoD lod = LengthsToOffsets({{2, 0, 3}});
  EXPECT_EQ(lod, (LoD{{0, 2, 2, 5}}));
  EXPECT_EQ(OffsetsToLengths(lod), (std::vector<std::vector<int64_t>>{{2, 0, 3}}));
  EXPECT_EQ(LoDToString(lod), "[[0, 2, 2, 5]]");
  EXPECT_THROW(LengthsToOffsets({{1, -1}}), InvalidArgument);
}

TEST(LoD, ValidatesEveryRule) {
  EXPECT_TRUE(IsValidLoD({}, 7));
  EXPECT_TRUE(IsValidLoD({{0, 2, 3}, {0, 1, 1, 4}}, 4));
  EXPECT_FALSE(IsValidLoD({{0}}, 0));                     // no sequence
  EXPECT_FALSE(IsValidLoD({{1, 4}}, 4));                  // does not start at 0
  EXPECT_FALSE(IsValidLoD({{0, 3, 2}}, 2));               // decreases
  EXPECT_FALSE(IsValidLoD({{0, 2}}, 3));                  // rows differ
  EXPECT_FALSE(IsValidLoD({{0, 1}, {0, 1, 4}}, 4));       // outer level ends early
  try {
    CheckLoD({{0, 2}}, 3, "feed 'ids'");
    FAIL() << "CheckLoD accepted offsets ending at 2 for 3 rows";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("feed 'ids': invalid LoD [[0, 2]]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3 rows"), std::string::npos) << e.what();
  }
}

TEST(Tensor, OffsetsTravelWithTheValue) {
  auto t = Tensor::FromVector<float>({1, 2, 3, 4}, {4, 1});
  EXPECT_FALSE(t.has_lod());
  EXPECT_TRUE(t.lod().empty());
  t.set_lod({{0, 1, 4}});
  EXPECT_EQ(t.lod_level(), 1);
  Tensor shared = t;
  Tensor deep = t.Clone();
  Tensor copied;
  copied.CopyFrom(t);
  for (const Tensor* c : {&shared, &deep, &copied}) EXPECT_EQ(c->lod(), (LoD{{0, 1, 4}}));
  EXPECT_FALSE(t.Slice(0, 2).has_lod());
  t.set_lod({});
  EXPECT_FALSE(t.has_lod());
  EXPECT_EQ(shared.lod(), (LoD{{0, 1, 4}}));  // offsets are values, not shared state
  Tensor other;
  other.ShareLoD(shared);
  EXPECT_EQ(other.lod_level(), 1);
  EXPECT_NE(shared.DebugString().find("lod [[0, 1, 4]]"), std::string::npos);
}

}  // namespace
}  // namespace flotilla
