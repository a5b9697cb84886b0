#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "flotilla/common/error.h"
#include "flotilla/io/reader.h"

namespace flotilla::io {
namespace {

// Samples 0..n-1, each one float field holding its index.
Reader Numbers(int n) {
  auto samples = std::make_shared<std::vector<Sample>>();
  for (int i = 0; i < n; ++i) samples->push_back({Tensor::FromVector<float>({float(i)}, {1})});
  return FromSamples(samples);
}

int Value(const Sample& s) { return static_cast<int>(s[0].data<float>()[0]); }

std::vector<int> Values(const std::vector<Sample>& samples) {
  std::vector<int> out;
  for (const auto& s : samples) out.push_back(Value(s));
  return out;
}

std::vector<size_t> Sizes(const std::vector<SampleBatch>& batches) {
  std::vector<size_t> out;
  for (const auto& b : batches) out.push_back(b.size());
  return out;
}

// Batches whose first sample holds the batch index; forever, or throws
// InvalidArgument after `fail_after` batches. Counts batches produced.
BatchReader Counting(std::shared_ptr<std::atomic<int>> produced, int fail_after = -1) {
  return [=]() -> BatchGenerator {
    return [=]() -> std::optional<SampleBatch> {
      int i = produced->load();
      if (i == fail_after) throw InvalidArgument("upstream broke at batch 3");
      produced->fetch_add(1);
      return SampleBatch{{Tensor::FromVector<float>({float(i)}, {1})}};
    };
  };
}

TEST(ReaderTest, FromSamplesStartsAFreshPassEachCall) {
  Reader r = Numbers(4);
  EXPECT_EQ(Values(ReadAll(r)), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(Values(ReadAll(r)), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(ReadAll(Numbers(0)).empty());
}

TEST(ReaderTest, BatchKeepsOrAndDropsTheLastPartialBatch) {
  EXPECT_EQ(Sizes(ReadAll(Batch(Numbers(10), 3))), (std::vector<size_t>{3, 3, 3, 1}));
  EXPECT_EQ(Sizes(ReadAll(Batch(Numbers(10), 3, /*drop_last=*/true))),
            (std::vector<size_t>{3, 3, 3}));
  EXPECT_EQ(Sizes(ReadAll(Batch(Numbers(9), 3))), (std::vector<size_t>{3, 3, 3}));
  EXPECT_EQ(Sizes(ReadAll(Batch(Numbers(2), 5, true))), (std::vector<size_t>{}));
  EXPECT_EQ(Sizes(ReadAll(Batch(Numbers(0), 5))), (std::vector<size_t>{}));
  auto batches = ReadAll(Batch(Numbers(5), 2));
  EXPECT_EQ(Values(batches[1]), (std::vector<int>{2, 3}));
  EXPECT_THROW(Batch(Numbers(5), 0), InvalidArgument);
}

TEST(ReaderTest, ShuffleIsABufferedPermutation) {
  const int n = 95, buf = 10;
  std::vector<int> out = Values(ReadAll(Shuffle(Numbers(n), buf, /*seed=*/7)));
  ASSERT_EQ(out.size(), size_t(n));
  // Each buffer-full is a permutation of the matching input block.
  for (int begin = 0; begin < n; begin += buf) {
    std::vector<int> block(out.begin() + begin, out.begin() + std::min(n, begin + buf));
    std::sort(block.begin(), block.end());
    for (size_t k = 0; k < block.size(); ++k) EXPECT_EQ(block[k], begin + int(k));
  }
  std::vector<int> identity(n);
  for (int i = 0; i < n; ++i) identity[i] = i;
  EXPECT_NE(out, identity);
  EXPECT_THROW(Shuffle(Numbers(3), 0, 1), InvalidArgument);
}

TEST(ReaderTest, ShuffleIsReproducibleAndVariesByPass) {
  Reader a = Shuffle(Numbers(50), 50, 3);
  Reader b = Shuffle(Numbers(50), 50, 3);
  auto a0 = Values(ReadAll(a)), a1 = Values(ReadAll(a));
  EXPECT_EQ(a0, Values(ReadAll(b)));
  EXPECT_NE(a0, a1);
  // Resuming at pass 1 sees pass 1's order.
  EXPECT_EQ(a1, Values(ReadAll(Shuffle(Numbers(50), 50, 3, /*first_pass=*/1))));
  EXPECT_NE(a0, Values(ReadAll(Shuffle(Numbers(50), 50, 4))));
}

TEST(ReaderTest, PrefetchYieldsTheSameBatchesInOrder) {
  BatchReader plain = Batch(Numbers(23), 4);
  for (int capacity : {1, 2, 8}) {
    auto fetched = ReadAll(Prefetch(plain, capacity));
    auto expected = ReadAll(plain);
    ASSERT_EQ(fetched.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(Values(fetched[i]), Values(expected[i]));
  }
  EXPECT_TRUE(ReadAll(Prefetch(Batch(Numbers(0), 4), 2)).empty());
  EXPECT_THROW(Prefetch(plain, 0), InvalidArgument);
}

TEST(ReaderTest, PrefetchRethrowsTheProducersErrorAfterEarlierBatches) {
  auto produced = std::make_shared<std::atomic<int>>(0);
  BatchGenerator next = Prefetch(Counting(produced, /*fail_after=*/3), 2)();
  for (int i = 0; i < 3; ++i) {
    auto batch = next();
    ASSERT_TRUE(batch.has_value());
    EXPECT_EQ(Value((*batch)[0]), i);
  }
  try {
    next();
    FAIL() << "expected the producer's error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("upstream broke at batch 3"), std::string::npos);
  }
  EXPECT_FALSE(next().has_value());  // the pass is over after the error
}

TEST(ReaderTest, PrefetchPropagatesAFailingReaderCreator) {
  BatchReader broken = []() -> BatchGenerator { throw NotFound("no such data file 'x.csv'"); };
  BatchGenerator next = Prefetch(broken, 2)();
  EXPECT_THROW(next(), NotFound);
}

TEST(ReaderTest, DestroyingAPrefetchingGeneratorStopsItsThread) {
  auto produced = std::make_shared<std::atomic<int>>(0);
  {
    BatchGenerator next = Prefetch(Counting(produced), /*capacity=*/3)();
    ASSERT_TRUE(next().has_value());
    ASSERT_TRUE(next().has_value());
    // Let the producer fill the queue and block on it.
    while (produced->load() < 2 + 3) std::this_thread::yield();
  }  // an endless upstream: returning here means the thread stopped and joined
  int after = produced->load();
  EXPECT_LE(after, 2 + 3 + 1);  // bounded read-ahead
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(produced->load(), after);
  // Abandoning a generator before reading anything is fine too.
  { BatchGenerator unused = Prefetch(Counting(produced), 1)(); }
}

TEST(ReaderTest, TrackCountsConsumedBatchesPerPass) {
  auto pos = std::make_shared<ReaderPosition>();
  BatchReader r = Track(Prefetch(Batch(Numbers(10), 3), 4), pos);
  EXPECT_EQ(pos->pass, -1);
  BatchGenerator next = r();
  next();
  next();
  EXPECT_EQ(pos->pass, 0);
  EXPECT_EQ(pos->batches, 2);  // not the batches prefetched ahead
  EXPECT_EQ(ReadAll(r).size(), 4u);
  EXPECT_EQ(pos->pass, 1);
  EXPECT_EQ(pos->batches, 4);
}

TEST(ReaderTest, SkipResumesTheFirstPassOnly) {
  auto pos = std::make_shared<ReaderPosition>();
  BatchReader r = Skip(Track(Batch(Numbers(10), 3), pos), 2);
  auto first = ReadAll(r);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(Values(first[0]), (std::vector<int>{6, 7, 8}));
  EXPECT_EQ(pos->batches, 4);  // absolute: the skipped batches count
  EXPECT_EQ(ReadAll(r).size(), 4u);
  EXPECT_TRUE(ReadAll(Skip(Batch(Numbers(10), 3), 9)).empty());
  EXPECT_EQ(Values(ReadAll(SkipSamples(Numbers(5), 3))), (std::vector<int>{3, 4}));
  EXPECT_THROW(Skip(Batch(Numbers(1), 1), -1), InvalidArgument);
}

}  // namespace
}  // namespace flotilla::io
