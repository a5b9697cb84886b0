#include "flotilla/io/data_feeder.h"

#include <gtest/gtest.h>

namespace flotilla::io {
namespace {

class DataFeederTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Block& b = program.global_block();
    VarDesc& x = b.CreateVar("x");
    x.shape = {-1, 3};
    x.is_data = true;
    VarDesc& label = b.CreateVar("label");
    label.shape = {-1, 1};
    label.dtype = DType::kInt64;
    label.is_data = true;
  }

  Sample Good(float base, int64_t label) {
    return {Tensor::FromVector<float>({base, base + 1, base + 2}, {3}),
            Tensor::FromVector<int64_t>({label}, {1})};
  }

  std::string FeedError(const std::vector<Sample>& batch) {
    DataFeeder feeder({program.global_block().GetVariable("x"),
                       program.global_block().GetVariable("label")});
    try {
      feeder.Feed(batch);
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "no error";
  }

  Program program;
};

TEST_F(DataFeederTest, StacksSamplesBehindABatchDimension) {
  DataFeeder feeder({program.global_block().GetVariable("x"),
                     program.global_block().GetVariable("label")});
  FeedMap feed = feeder.Feed({Good(0, 1), Good(10, 0)});
  ASSERT_EQ(feed.size(), 2u);
  EXPECT_EQ(feed["x"].dims(), (Dims{2, 3}));
  EXPECT_EQ(feed["x"].ToVector<float>(), (std::vector<float>{0, 1, 2, 10, 11, 12}));
  EXPECT_EQ(feed["label"].dims(), (Dims{2, 1}));
  EXPECT_EQ(feed["label"].dtype(), DType::kInt64);
  EXPECT_EQ(feed["label"].ToVector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(feeder.feed_names(), (std::vector<std::string>{"x", "label"}));
}

TEST_F(DataFeederTest, PacksSequencesOfALoDVariableWithOffsets) {
  VarDesc& ids = program.global_block().CreateVar("ids");
  ids.shape = {-1, 1};
  ids.dtype = DType::kInt64;
  ids.lod_level = 1;
  DataFeeder feeder({program.global_block().GetVariable("ids")});
  FeedMap feed = feeder.Feed({{Tensor::FromVector<int64_t>({4, 5, 6}, {3})},
                              {Tensor::FromVector<int64_t>({}, {0})},
                              {Tensor::FromVector<int64_t>({7}, {1, 1})}});
  EXPECT_EQ(feed["ids"].dims(), (Dims{4, 1}));
  EXPECT_EQ(feed["ids"].ToVector<int64_t>(), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(feed["ids"].lod(), (LoD{{0, 3, 3, 4}}));
}

TEST_F(DataFeederTest, PacksNestedSequencesOfALodLevelTwoVariable) {
  VarDesc& ids = program.global_block().CreateVar("paragraphs");
  ids.shape = {-1, 1};
  ids.dtype = DType::kInt64;
  ids.lod_level = 2;
  DataFeeder feeder({program.global_block().GetVariable("paragraphs")});
  // Paddle's test_data_feeder: [[1, 2, 3], [4, 5]] and [[6, 7, 8, 9]].
  Tensor first = Tensor::FromVector<int64_t>({1, 2, 3, 4, 5}, {5, 1});
  first.set_lod({{0, 3, 5}});
  Tensor second = Tensor::FromVector<int64_t>({6, 7, 8, 9}, {4, 1});
  second.set_lod({{0, 4}});
  FeedMap feed = feeder.Feed({{first}, {second}});
  EXPECT_EQ(feed["paragraphs"].dims(), (Dims{9, 1}));
  EXPECT_EQ(feed["paragraphs"].lod(), (LoD{{0, 2, 3}, {0, 3, 5, 9}}));
  EXPECT_EQ(feed["paragraphs"].ToVector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  Tensor flat = Tensor::FromVector<int64_t>({1, 2}, {2, 1});  // no offsets of its own
  EXPECT_THROW(feeder.Feed({{flat}}), InvalidArgument);
}

TEST_F(DataFeederTest, AcceptsAnyShapeWithTheRightElementCount) {
  DataFeeder feeder({program.global_block().GetVariable("x")});
  FeedMap feed = feeder.Feed({{Tensor::FromVector<float>({1, 2, 3}, {1, 3})}});
  EXPECT_EQ(feed["x"].dims(), (Dims{1, 3}));
}

TEST_F(DataFeederTest, AWrongFieldNamesVariableSampleAndExpectedShape) {
  Sample bad_size = Good(0, 1);
  bad_size[0] = Tensor::FromVector<float>({1, 2}, {2});
  std::string msg = FeedError({Good(0, 1), bad_size});
  EXPECT_NE(msg.find("feed variable 'x'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sample 1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float32 of shape [3]"), std::string::npos) << msg;

  Sample bad_type = Good(0, 1);
  bad_type[1] = Tensor::FromVector<float>({1}, {1});
  msg = FeedError({bad_type});
  EXPECT_NE(msg.find("feed variable 'label'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sample 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int64 of shape [1]"), std::string::npos) << msg;

  msg = FeedError({Good(0, 1), {Good(0, 1)[0]}});
  EXPECT_NE(msg.find("sample 1 has the wrong number of fields"), std::string::npos) << msg;
  EXPECT_NE(FeedError({}).find("batch is empty"), std::string::npos);
}

}  // namespace
}  // namespace flotilla::io
