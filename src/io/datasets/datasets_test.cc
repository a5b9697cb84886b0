#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <fstream>
#include <optional>

#include "flotilla/common/file_util.h"
#include "flotilla/io/datasets/synthetic.h"
#include "flotilla/io/datasets/uci_housing.h"
#include "io/testing/temp_dir.h"

namespace flotilla::io {
namespace {

// Points FLOTILLA_DATA_HOME at `dir` until destroyed.
class DataHomeGuard {
 public:
  explicit DataHomeGuard(const std::string& dir) {
    if (const char* old = ::getenv("FLOTILLA_DATA_HOME")) old_ = old;
    ::setenv("FLOTILLA_DATA_HOME", dir.c_str(), 1);
  }
  ~DataHomeGuard() {
    if (old_) ::setenv("FLOTILLA_DATA_HOME", old_->c_str(), 1);
    else ::unsetenv("FLOTILLA_DATA_HOME");
  }

 private:
  std::optional<std::string> old_;
};

TEST(UciHousingTest, ShapesSplitAndNormalisation) {
  if (!FileExists(uci_housing::DataPath())) {
    GTEST_SKIP() << uci_housing::DataPath() << " is absent (install python3-sklearn)";
  }
  std::vector<Sample> train = ReadAll(uci_housing::Train());
  std::vector<Sample> test = ReadAll(uci_housing::Test());
  ASSERT_EQ(train.size(), 404u);
  ASSERT_EQ(test.size(), 102u);
  EXPECT_EQ(train[0][0].dims(), (Dims{13}));
  EXPECT_EQ(train[0][1].dims(), (Dims{1}));
  EXPECT_EQ(train[0][1].data<float>()[0], 24.0f);  // the first MEDV
  // Over all 506 rows every feature has mean 0 and max - min 1.
  for (int f = 0; f < 13; ++f) {
    double sum = 0, lo = 1e9, hi = -1e9;
    for (const auto* set : {&train, &test}) {
      for (const auto& s : *set) {
        double v = s[0].data<float>()[f];
        sum += v;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
    EXPECT_NEAR(sum / 506, 0.0, 1e-5) << "feature " << f;
    EXPECT_NEAR(hi - lo, 1.0, 1e-5) << "feature " << f;
  }
}

TEST(UciHousingTest, ReadsFromDataHomeAndNormalisesAsPaddle) {
  testing::TempDir home;
  std::ofstream csv(home / "boston_house_prices.csv");
  csv << "5,13\nCRIM,ZN,INDUS,CHAS,NOX,RM,AGE,DIS,RAD,TAX,PTRATIO,B,LSTAT,MEDV\n";
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 13; ++c) csv << (c == 0 ? r * 2 : 7) << ",";
    csv << 10 + r << "\n";
  }
  csv.close();
  DataHomeGuard guard(home.path());
  std::vector<Sample> train = ReadAll(uci_housing::Train());
  std::vector<Sample> test = ReadAll(uci_housing::Test());
  ASSERT_EQ(train.size(), 4u);  // int(5 * 0.8)
  ASSERT_EQ(test.size(), 1u);
  // Feature 0 is 0,2,4,6,8: mean 4, range 8.
  EXPECT_FLOAT_EQ(train[0][0].data<float>()[0], -0.5f);
  EXPECT_FLOAT_EQ(test[0][0].data<float>()[0], 0.5f);
  EXPECT_FLOAT_EQ(test[0][0].data<float>()[5], 0.0f);  // constant feature
  EXPECT_FLOAT_EQ(test[0][1].data<float>()[0], 14.0f);
}

TEST(UciHousingTest, AMissingFileNamesPathPackageAndVariable) {
  testing::TempDir empty;
  DataHomeGuard guard(empty.path());
  try {
    uci_housing::Train();
    FAIL() << "expected NotFound";
  } catch (const NotFound& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(empty / "boston_house_prices.csv"), std::string::npos) << msg;
    EXPECT_NE(msg.find("python3-sklearn"), std::string::npos) << msg;
    EXPECT_NE(msg.find("FLOTILLA_DATA_HOME"), std::string::npos) << msg;
  }
}

TEST(UciHousingTest, AMalformedFileIsCorruption) {
  testing::TempDir home;
  std::ofstream(home / "boston_house_prices.csv") << "3,13\nheader\n1,2,3\n";
  DataHomeGuard guard(home.path());
  EXPECT_THROW(uci_housing::Train(), Corruption);
}

// A multi-class perceptron: learns any linearly separable set.
double PerceptronAccuracy(const std::vector<Sample>& train, const std::vector<Sample>& test,
                          int features, int classes) {
  std::vector<double> w(size_t(features) * classes, 0.0);
  auto predict = [&](const Sample& s) {
    int best = 0;
    double top = -1e300;
    for (int c = 0; c < classes; ++c) {
      double v = 0;
      for (int f = 0; f < features; ++f) v += s[0].data<float>()[f] * w[size_t(f) * classes + c];
      if (v > top) top = v, best = c;
    }
    return best;
  };
  for (int epoch = 0; epoch < 10; ++epoch) {
    for (const auto& s : train) {
      int y = int(s[1].data<int64_t>()[0]), p = predict(s);
      if (p == y) continue;
      for (int f = 0; f < features; ++f) {
        w[size_t(f) * classes + y] += s[0].data<float>()[f];
        w[size_t(f) * classes + p] -= s[0].data<float>()[f];
      }
    }
  }
  int right = 0;
  for (const auto& s : test) right += predict(s) == s[1].data<int64_t>()[0];
  return double(right) / double(test.size());
}

TEST(SyntheticTest, ShapesSplitAndBalance) {
  synthetic::Dataset data = synthetic::Classification(1000, 32, 2, /*seed=*/1);
  std::vector<Sample> train = ReadAll(data.train), test = ReadAll(data.test);
  EXPECT_EQ(train.size(), 800u);
  EXPECT_EQ(test.size(), 200u);
  EXPECT_EQ(data.train_size, 800);
  EXPECT_EQ(data.test_size, 200);
  EXPECT_EQ(train[0][0].dims(), (Dims{32}));
  EXPECT_EQ(train[0][0].dtype(), DType::kFloat32);
  EXPECT_EQ(train[0][1].dims(), (Dims{1}));
  EXPECT_EQ(train[0][1].dtype(), DType::kInt64);
  int ones = 0;
  for (const auto& s : train) {
    int64_t y = s[1].data<int64_t>()[0];
    ASSERT_TRUE(y == 0 || y == 1);
    ones += int(y);
  }
  EXPECT_GT(ones, 800 * 0.3);
  EXPECT_LT(ones, 800 * 0.7);
  EXPECT_THROW(synthetic::Classification(10, 32, 1), InvalidArgument);
}

TEST(SyntheticTest, DeterministicPerSeed) {
  auto first = [](uint64_t seed) {
    return ReadAll(synthetic::Classification(10, 8, 2, seed).train)[0][0].ToVector<float>();
  };
  EXPECT_EQ(first(5), first(5));
  EXPECT_NE(first(5), first(6));
}

TEST(SyntheticTest, IsLearnable) {
  for (int classes : {2, 4}) {
    synthetic::Dataset data = synthetic::Classification(4000, 32, classes, /*seed=*/42);
    double acc = PerceptronAccuracy(ReadAll(data.train), ReadAll(data.test), 32, classes);
    EXPECT_GE(acc, 0.95) << classes << " classes";
  }
}

}  // namespace
}  // namespace flotilla::io
