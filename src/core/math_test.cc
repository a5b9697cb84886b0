#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "flotilla/common/error.h"
#include "flotilla/core/math.h"

namespace flotilla::math {
namespace {

template <typename T>
void CheckGemm(bool ta, bool tb) {
  int64_t m = 5, n = 7, k = 3;
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> a(m * k), b(k * n), c(m * n, 1), ref(m * n, 1);
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  Gemm(ta, tb, m, n, k, T(2), a.data(), lda, b.data(), ldb, T(0.5), c.data(), n);
  GemmNaive(ta, tb, m, n, k, T(2), a.data(), lda, b.data(), ldb, T(0.5), ref.data(), n);
  for (int64_t i = 0; i < m * n; ++i) EXPECT_NEAR(c[i], ref[i], 1e-5);
}

TEST(Gemm, MatchesNaiveForEveryTranspose) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      CheckGemm<float>(ta, tb);
      CheckGemm<double>(ta, tb);
    }
  }
}

TEST(Broadcast, PaddleAxisRules) {
  auto b = ComputeBroadcast({2, 3, 4, 5}, {3, 4}, 1);
  EXPECT_EQ(b.pre, 2);
  EXPECT_EQ(b.n, 12);
  EXPECT_EQ(b.post, 5);
  b = ComputeBroadcast({2, 3, 4, 5}, {4, 5}, -1);
  EXPECT_EQ(b.pre, 6);
  EXPECT_EQ(b.n, 20);
  EXPECT_EQ(b.post, 1);
  b = ComputeBroadcast({2, 3, 4}, {3, 1}, 1);  // trailing 1s of Y are ignored
  EXPECT_EQ(b.pre, 2);
  EXPECT_EQ(b.n, 3);
  EXPECT_EQ(b.post, 4);
  EXPECT_THROW(ComputeBroadcast({2, 3}, {4}, -1), flotilla::InvalidArgument);
}

}  // namespace
}  // namespace flotilla::math
