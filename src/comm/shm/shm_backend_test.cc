// The shm backend's own grid, threads as ranks: every collective at sizes
// around the flag-round limit, the pipeline's chunk and ring boundaries and
// uneven regions; results equal to a rank-order reference and bit-identical
// on every rank; buffers at odd addresses.
#include "comm/shm/shm_backend.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>

#include "comm/testing/run_ranks.h"
#include "flotilla/comm/hash_store.h"
#include "flotilla/common/error.h"

namespace flotilla::comm::shm {
namespace {

using namespace std::chrono_literals;
using testing::RunRanks;

std::vector<std::unique_ptr<ShmBackend>> MakeBackends(int n, ShmOptions o = {}) {
  auto store = std::make_shared<HashStore>();
  std::vector<std::unique_ptr<ShmBackend>> b(n);
  if (o.timeout == Store::kDefaultTimeout) o.timeout = 60s;
  RunRanks(n, [&](int r) { b[r] = std::make_unique<ShmBackend>(*store, r, n, o); });
  return b;
}

// Element counts (float) that cross every boundary of the plan at n ranks:
// the flag round's limit, one chunk, several chunks with a partial last one,
// regions not a multiple of a cache line.
std::vector<size_t> Counts(const ShmBackend& b) {
  const size_t chunk = b.layout().max_chunk / sizeof(float);
  return {1, 7, 8192, 8193, 2 * chunk + 3, 5 * chunk * 3 + 17, 13 * chunk + 1};
}

// Random inputs: a sum in a different order would differ in its last bits.
std::vector<float> Input(int rank, size_t count) {
  std::mt19937 gen(1234 + rank);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(count);
  for (auto& x : v) x = d(gen) * (1 << (rank % 7));
  return v;
}

std::vector<float> RankOrderSum(int n, size_t count, size_t first = 0) {
  std::vector<float> acc = Input(0, first + count);
  for (int r = 1; r < n; ++r) {
    auto v = Input(r, first + count);
    for (size_t i = 0; i < acc.size(); ++i) acc[i] += v[i];
  }
  return std::vector<float>(acc.begin() + first, acc.end());
}

TEST(ShmBackend, AllreduceIsRankOrderAndBitIdenticalEverywhere) {
  for (int n : {2, 3, 5}) {
    auto b = MakeBackends(n);
    for (size_t count : Counts(*b[0])) {
      std::vector<std::vector<float>> out(n);
      RunRanks(n, [&](int r) {
        out[r] = Input(r, count);
        b[r]->allreduce(out[r].data(), count, DType::kFloat32, ReduceOp::kSum);
      });
      auto want = RankOrderSum(n, count);
      for (int r = 0; r < n; ++r) {
        ASSERT_EQ(std::memcmp(out[r].data(), want.data(), count * sizeof(float)), 0)
            << "n " << n << " count " << count << " rank " << r;
      }
    }
  }
}

// With and without single-copy broadcast/allgather (on when this kernel lets
// a process read its own memory through process_vm_readv, as here).
TEST(ShmBackend, EveryOpAtEveryBoundaryFromOddAddresses) {
  for (auto [n, single_copy] : {std::pair{2, true}, {3, true}, {2, false}, {3, false}}) {
    ShmOptions o;
    o.single_copy = single_copy;
    auto b = MakeBackends(n, o);
    if (!single_copy) {
      EXPECT_FALSE(b[0]->single_copy());
    }
    for (size_t count : Counts(*b[0])) {
      RunRanks(n, [&](int r) {
        ShmBackend& g = *b[r];
        // One element past a 64-byte boundary: aligned for the type only.
        std::vector<double> buf(count * n + 8);
        double* d = buf.data() + 1;
        for (size_t i = 0; i < count; ++i) d[i] = r * 1000.0 + double(i % 101);
        g.allreduce(d, count, DType::kFloat64, ReduceOp::kAvg);
        for (size_t i = 0; i < count; i += 7) {
          ASSERT_EQ(d[i], (n - 1) * 500.0 + double(i % 101)) << "avg count " << count;
        }
        for (size_t i = 0; i < count; ++i) d[i] = r == n - 1 ? double(i) : -1;
        g.broadcast(d, count, DType::kFloat64, n - 1);
        for (size_t i = 0; i < count; i += 5) ASSERT_EQ(d[i], double(i)) << "broadcast";
        std::vector<int64_t> in(count + 1), all(count * n + 1);
        for (size_t i = 0; i < count; ++i) in[i + 1] = int64_t(r) << 32 | int64_t(i);
        g.allgather(in.data() + 1, all.data() + 1, count, DType::kInt64);
        for (int t = 0; t < n; ++t) {
          for (size_t i = 0; i < count; i += 3) {
            ASSERT_EQ(all[1 + t * count + i], int64_t(t) << 32 | int64_t(i)) << "allgather";
          }
        }
        std::vector<int32_t> rs(count * n), got(count, -1);
        for (size_t i = 0; i < rs.size(); ++i) rs[i] = int32_t(i % 1000) - r;
        g.reduce_scatter(rs.data(), got.data(), count, DType::kInt32, ReduceOp::kMax);
        for (size_t i = 0; i < count; ++i) {
          ASSERT_EQ(got[i], int32_t((r * count + i) % 1000)) << "reduce_scatter " << i;
        }
        std::vector<float> red(count, float(r + 1));
        g.reduce(red.data(), count, DType::kFloat32, ReduceOp::kProd, 1);
        float prod = 1;
        for (int t = 1; t <= n; ++t) prod *= float(t);
        if (r == 1) {
          for (size_t i = 0; i < count; i += 3) ASSERT_EQ(red[i], prod) << "reduce " << i;
        }
      });
    }
  }
}

// Rounds back to back with different sizes: a fast rank must never overwrite
// a ring cell a slow one still reads.
TEST(ShmBackend, MixedSizesBackToBack) {
  const int n = 3;
  auto b = MakeBackends(n);
  const size_t big = b[0]->layout().max_chunk * 9 / sizeof(int64_t) + 5;
  RunRanks(n, [&](int r) {
    for (int it = 0; it < 40; ++it) {
      size_t count = it % 3 == 0 ? big : it % 3 == 1 ? 100 : big / 3;
      std::vector<int64_t> d(count, it + r);
      if (r == it % n) std::this_thread::sleep_for(1ms);
      b[r]->allreduce(d.data(), count, DType::kInt64, ReduceOp::kSum);
      ASSERT_EQ(d[count - 1], int64_t(n * it + n * (n - 1) / 2)) << "iteration " << it;
      ASSERT_EQ(d[0], d[count / 2]);
    }
  });
}

TEST(ShmBackend, ParkedWaiterWakesAndLateRankIsNamed) {
  ShmOptions o;
  o.timeout = 300ms;
  o.spin = 0us;  // park at once
  auto b = MakeBackends(2, o);
  RunRanks(2, [&](int r) {
    if (r == 1) std::this_thread::sleep_for(50ms);
    float v = 1;
    b[r]->allreduce(&v, 1, DType::kFloat32, ReduceOp::kSum);
    EXPECT_EQ(v, 2.0f);
  });
  EXPECT_GT(b[0]->stats().wait.parks, 0u);
  float v = 1;
  auto t0 = std::chrono::steady_clock::now();
  try {
    b[0]->allreduce(&v, 1, DType::kFloat32, ReduceOp::kSum);
    FAIL() << "allreduce without rank 1 completed";
  } catch (const DeadlineExceeded& e) {
    EXPECT_NE(std::string(e.what()).find("ranks [1]"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

}  // namespace
}  // namespace flotilla::comm::shm
