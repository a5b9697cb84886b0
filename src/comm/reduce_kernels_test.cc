// The reduction kernels under every instruction set this CPU runs (each one
// forced in turn): every dtype, op, source count, destination layout and
// streaming mode against scalar loops, bit for bit, at sizes around the
// vector widths and the blocked path's block; buffers at odd addresses.
#include "comm/reduce_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

#include "flotilla/common/error.h"

namespace flotilla::comm {
namespace {

constexpr int kSources = 4;
const size_t kCounts[] = {0, 1, 15, 17, 1023, 1027, 70001};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin,
                         ReduceOp::kProd};
const DType kDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64};

// Puts the kernels back on the widest instruction set when a test ends.
class ReduceKernels : public ::testing::Test {
 protected:
  void TearDown() override { UseIsa(SupportedIsas().back()); }
};

// Source s: values small enough that a product of four sources of any dtype
// neither overflows nor underflows. Generated once per dtype; a case uses a
// prefix.
template <typename T>
std::vector<T> Source(int s, size_t count) {
  static const std::vector<std::vector<T>> pool = [] {
    std::vector<std::vector<T>> p(kSources);
    for (int k = 0; k < kSources; ++k) {
      std::mt19937 gen(77 + k);
      std::uniform_int_distribution<int> d(-3, 3);
      p[k].resize(*std::max_element(std::begin(kCounts), std::end(kCounts)));
      for (auto& x : p[k]) {
        x = T(d(gen));
        if constexpr (std::is_floating_point_v<T>) x += T(d(gen)) / T(7);
      }
    }
    return p;
  }();
  return std::vector<T>(pool[s].begin(), pool[s].begin() + ptrdiff_t(count));
}

template <typename T>
T Apply(ReduceOp op, T x, T y) {
  switch (op) {
    case ReduceOp::kMax:
      return std::max(x, y);
    case ReduceOp::kMin:
      return std::min(x, y);
    case ReduceOp::kProd:
      return x * y;
    default:
      return x + y;
  }
}

// One case: what ReduceMany computes, as bytes of dst (and dst2).
struct Case {
  DType dtype;
  ReduceOp op;
  int nsrc;
  size_t count;
  bool stream, dst2, in_place;
  std::string Name() const {
    return std::string(DTypeName(dtype)) + " op " + std::to_string(int(op)) + " nsrc " +
           std::to_string(nsrc) + " count " + std::to_string(count) +
           (stream ? " stream" : "") + (dst2 ? " dst2" : "") + (in_place ? " in-place" : "");
  }
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (DType dtype : kDTypes) {
    for (ReduceOp op : kOps) {
      for (int nsrc = 1; nsrc <= kSources; ++nsrc) {
        for (size_t count : kCounts) {
          for (int mode = 0; mode < 8; ++mode) {
            cases.push_back({dtype, op, nsrc, count, bool(mode & 1), bool(mode & 2),
                             bool(mode & 4)});
          }
        }
      }
    }
  }
  return cases;
}

// The scalar result of `c`: sources folded in order, then the average's
// division.
template <typename T>
std::vector<T> Reference(const Case& c) {
  std::vector<T> r = Source<T>(0, c.count);
  for (int s = 1; s < c.nsrc; ++s) {
    auto v = Source<T>(s, c.count);
    for (size_t i = 0; i < c.count; ++i) r[i] = Apply(c.op, r[i], v[i]);
  }
  if (c.op == ReduceOp::kAvg) {
    for (auto& x : r) x /= T(c.nsrc);
  }
  return r;
}

// memcmp that accepts empty (possibly null) ranges.
bool SameBytes(const void* a, const void* b, size_t bytes) {
  return bytes == 0 || std::memcmp(a, b, bytes) == 0;
}

// Runs `c` through ReduceMany with the active kernels; the destination sits
// one element past an aligned start, the second destination at a fresh
// allocation; in place, the last source is the destination.
template <typename T>
void ExpectMatches(const Case& c) {
  std::vector<std::vector<T>> src;
  for (int s = 0; s < c.nsrc; ++s) src.push_back(Source<T>(s, c.count));
  std::vector<T> dst(c.count + 1, T(9)), dst2(c.dst2 ? c.count : 0, T(9));
  std::vector<const void*> ptrs;
  for (auto& v : src) ptrs.push_back(v.data());
  T* out = dst.data() + 1;
  if (c.in_place) out = src.back().data();
  ReduceMany({out, c.dst2 ? dst2.data() : nullptr, ptrs.data(), c.nsrc, c.count, c.dtype, c.op,
              c.op == ReduceOp::kAvg ? c.nsrc : 1, c.stream});
  const auto want = Reference<T>(c);
  ASSERT_TRUE(SameBytes(out, want.data(), c.count * sizeof(T)))
      << IsaName(ActiveIsa()) << ": " << c.Name();
  if (c.dst2) {
    ASSERT_TRUE(SameBytes(dst2.data(), want.data(), c.count * sizeof(T)))
        << IsaName(ActiveIsa()) << ": " << c.Name() << " (second destination)";
  }
}

// ReduceInto (in place on `a` when asked) and DivideBy against scalar loops.
template <typename T>
void ExpectPairwiseMatches(DType dtype, size_t count) {
  auto a = Source<T>(0, count), b = Source<T>(1, count);
  for (ReduceOp op : kOps) {
    std::vector<T> dst(count + 1), in_place = a;
    ReduceInto(dst.data() + 1, a.data(), b.data(), count, dtype, op);
    ReduceInto(in_place.data(), in_place.data(), b.data(), count, dtype, op);
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(dst[i + 1], Apply(op, a[i], b[i])) << IsaName(ActiveIsa()) << " op " << int(op);
      ASSERT_EQ(in_place[i], dst[i + 1]) << IsaName(ActiveIsa()) << " in place, op " << int(op);
    }
  }
  auto divided = a;
  DivideBy(divided.data(), count, dtype, 3);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(divided[i], T(a[i] / T(3))) << IsaName(ActiveIsa()) << " " << DTypeName(dtype);
  }
}

TEST_F(ReduceKernels, SupportedIsasStartAtBaselineAndTheWidestIsActive) {
  const auto isas = SupportedIsas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), Isa::kBaseline);
  EXPECT_EQ(ActiveIsa(), isas.back());
  EXPECT_TRUE(std::is_sorted(isas.begin(), isas.end()));
}

TEST_F(ReduceKernels, UnsupportedIsaIsRefusedByName) {
  for (Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
    const auto isas = SupportedIsas();
    if (std::find(isas.begin(), isas.end(), isa) != isas.end()) {
      UseIsa(isa);
      EXPECT_EQ(ActiveIsa(), isa);
      continue;
    }
    const Isa before = ActiveIsa();
    try {
      UseIsa(isa);
      ADD_FAILURE() << IsaName(isa) << " accepted on a CPU that cannot run it";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(IsaName(isa)), std::string::npos) << e.what();
    }
    EXPECT_EQ(ActiveIsa(), before);
  }
}

TEST_F(ReduceKernels, EveryIsaMatchesScalarLoopsBitForBit) {
  const auto cases = Cases();
  for (Isa isa : SupportedIsas()) {
    UseIsa(isa);
    SCOPED_TRACE(IsaName(isa));
    for (const Case& c : cases) {
      VisitDType(c.dtype, [&]<typename T>() { ExpectMatches<T>(c); });
      if (::testing::Test::HasFatalFailure()) return;
    }
    for (DType dtype : kDTypes) {
      for (size_t count : kCounts) {
        VisitDType(dtype, [&]<typename T>() { ExpectPairwiseMatches<T>(dtype, count); });
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST_F(ReduceKernels, StreamedCopiesMatchAtOddOffsets) {
  std::vector<char> src(70001 + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = char(i * 7 + 3);
  for (size_t bytes : {size_t(0), size_t(5), size_t(63), size_t(64), size_t(4097), size_t(70001)}) {
    for (size_t offset : {0, 1, 13}) {
      for (bool stream : {false, true}) {
        std::vector<char> dst(bytes + 64, 0);
        CopyBytes(dst.data() + offset, src.data() + 3, bytes, stream);
        ASSERT_TRUE(SameBytes(dst.data() + offset, src.data() + 3, bytes))
            << bytes << " bytes at offset " << offset << (stream ? " streamed" : "");
        ASSERT_EQ(dst[offset + bytes], 0) << "wrote past the end";
      }
    }
  }
}

}  // namespace
}  // namespace flotilla::comm
