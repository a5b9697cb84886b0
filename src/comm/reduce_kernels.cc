#include "comm/reduce_kernels.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "flotilla/common/enforce.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif
#define FLOTILLA_INLINE [[gnu::always_inline]] inline

namespace flotilla::comm {
namespace {

// Elements per block of ReduceMany: a few KB, so a block's partial result
// stays in L1 while the remaining sources are folded in.
constexpr size_t kBlockBytes = 4096;

template <typename T, typename F>
FLOTILLA_INLINE void Apply(T* dst, const T* a, const T* b, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) dst[i] = f(a[i], b[i]);
}

template <typename T>
FLOTILLA_INLINE void ReduceTyped(T* dst, const T* a, const T* b, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return Apply(dst, a, b, n, [](T x, T y) { return x + y; });
    case ReduceOp::kMax:
      return Apply(dst, a, b, n, [](T x, T y) { return std::max(x, y); });
    case ReduceOp::kMin:
      return Apply(dst, a, b, n, [](T x, T y) { return std::min(x, y); });
    case ReduceOp::kProd:
      return Apply(dst, a, b, n, [](T x, T y) { return x * y; });
  }
}

// Two sources into two destinations in one pass (the 2-rank pipeline's
// reduce: the result goes to the caller's buffer and to the ring).
template <typename T, typename F>
FLOTILLA_INLINE void Apply2(T* dst, T* __restrict dst2, const T* a, const T* b, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) {
    const T v = f(a[i], b[i]);
    dst[i] = v;
    dst2[i] = v;
  }
}

template <typename T>
FLOTILLA_INLINE void ReduceTyped2(T* dst, T* dst2, const T* a, const T* b, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return Apply2(dst, dst2, a, b, n, [](T x, T y) { return x + y; });
    case ReduceOp::kMax:
      return Apply2(dst, dst2, a, b, n, [](T x, T y) { return std::max(x, y); });
    case ReduceOp::kMin:
      return Apply2(dst, dst2, a, b, n, [](T x, T y) { return std::min(x, y); });
    case ReduceOp::kProd:
      return Apply2(dst, dst2, a, b, n, [](T x, T y) { return x * y; });
  }
}

template <typename T>
FLOTILLA_INLINE void DivideTyped(T* p, size_t n, T d) {
  for (size_t i = 0; i < n; ++i) p[i] /= d;
}

void StreamCopy(char* dst, const char* src, size_t bytes) {
#if defined(__x86_64__)
  // Align the destination to 16 bytes, stream whole 64-byte lines, finish
  // with ordinary stores.
  size_t head = std::min(bytes, (16 - reinterpret_cast<uintptr_t>(dst) % 16) % 16);
  std::memcpy(dst, src, head);
  size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
  std::memcpy(dst + i, src + i, bytes - i);
#else
  std::memcpy(dst, src, bytes);
#endif
}

void StoreFence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

// One block of ReduceMany: the partial result goes to `acc` (dst itself, or
// an L1 buffer when streaming), then out to the destinations.
template <typename T>
FLOTILLA_INLINE void ReduceBlock(const ReduceArgs& r, bool via_tmp, size_t first, size_t n,
                                 T* tmp) {
  auto src = [&](int s) { return static_cast<const T*>(r.srcs[s]) + first; };
  T* dst = static_cast<T*>(r.dst) + first;
  T* acc = via_tmp ? tmp : dst;
  if (r.nsrc == 1) {
    if (acc != src(0)) std::memcpy(acc, src(0), n * sizeof(T));
  } else {
    ReduceTyped(acc, src(0), src(1), n, r.op);
  }
  for (int s = 2; s < r.nsrc; ++s) ReduceTyped(acc, acc, src(s), n, r.op);
  if (r.op == ReduceOp::kAvg && r.divisor > 1) DivideTyped(acc, n, static_cast<T>(r.divisor));
  if (r.stream) {
    StreamCopy(reinterpret_cast<char*>(dst), reinterpret_cast<char*>(acc), n * sizeof(T));
  } else if (via_tmp) {
    std::memcpy(dst, acc, n * sizeof(T));
  }
  if (r.dst2) std::memcpy(static_cast<T*>(r.dst2) + first, acc, n * sizeof(T));
}

// Two sources, one or two destinations, no division: one pass.
template <typename T>
FLOTILLA_INLINE void ReduceTwo(const ReduceArgs& r) {
  auto* dst = static_cast<T*>(r.dst);
  auto* a = static_cast<const T*>(r.srcs[0]);
  auto* b = static_cast<const T*>(r.srcs[1]);
  if (!r.dst2) return ReduceTyped(dst, a, b, r.count, r.op);
  ReduceTyped2(dst, static_cast<T*>(r.dst2), a, b, r.count, r.op);
}

template <typename T>
FLOTILLA_INLINE void ReduceBlocked(const ReduceArgs& r) {
  constexpr size_t kBlock = kBlockBytes / sizeof(T);
  alignas(64) T tmp[kBlock];
  // The partial result may not overwrite a source still to be read: one
  // after the first pass (which reads both its sources before it writes).
  bool via_tmp = r.stream;
  for (int s = 2; s < r.nsrc; ++s) via_tmp |= r.srcs[s] == r.dst;
  for (size_t first = 0; first < r.count; first += kBlock) {
    ReduceBlock<T>(r, via_tmp, first, std::min(kBlock, r.count - first), tmp);
  }
}

// The entry points compiled for one instruction set: the loops above are
// inlined into each, so the compiler vectorises them for that set.
#define FLOTILLA_KERNEL_SET(NAME, TARGET)                                               \
  struct NAME {                                                                       \
    template <typename T>                                                             \
    TARGET static void Reduce(T* dst, const T* a, const T* b, size_t n, ReduceOp op) { \
      ReduceTyped(dst, a, b, n, op);                                                  \
    }                                                                                 \
    template <typename T>                                                             \
    TARGET static void Divide(T* p, size_t n, T d) {                                  \
      DivideTyped(p, n, d);                                                           \
    }                                                                                 \
    template <typename T>                                                             \
    TARGET static void Two(const ReduceArgs& r) {                                     \
      ReduceTwo<T>(r);                                                                \
    }                                                                                 \
    template <typename T>                                                             \
    TARGET static void Blocked(const ReduceArgs& r) {                                 \
      ReduceBlocked<T>(r);                                                            \
    }                                                                                 \
  };

FLOTILLA_KERNEL_SET(BaselineKernels, )
#if defined(__x86_64__)
FLOTILLA_KERNEL_SET(Avx2Kernels, __attribute__((target("avx2"))))
FLOTILLA_KERNEL_SET(Avx512Kernels, __attribute__((target("avx512f"))))
#endif

bool CpuRuns(Isa isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();  // libgcc also checks that the OS saves the registers
  if (isa == Isa::kAvx512) return __builtin_cpu_supports("avx512f");
  if (isa == Isa::kAvx2) return __builtin_cpu_supports("avx2");
#endif
  return isa == Isa::kBaseline;
}

std::atomic<Isa>& Active() {
  static std::atomic<Isa> active{SupportedIsas().back()};
  return active;
}

// Calls fn.template operator()<Kernels>() with the active set's kernels.
template <typename Fn>
void WithKernels(Fn&& fn) {
  switch (Active().load(std::memory_order_relaxed)) {
#if defined(__x86_64__)
    case Isa::kAvx512:
      return fn.template operator()<Avx512Kernels>();
    case Isa::kAvx2:
      return fn.template operator()<Avx2Kernels>();
#endif
    default:
      return fn.template operator()<BaselineKernels>();
  }
}

}  // namespace

void ReduceInto(void* dst, const void* a, const void* b, size_t count, DType dtype, ReduceOp op) {
  VisitDType(dtype, [&]<typename T>() {
    WithKernels([&]<typename K>() {
      K::template Reduce<T>(static_cast<T*>(dst), static_cast<const T*>(a),
                            static_cast<const T*>(b), count, op);
    });
  });
}

void DivideBy(void* data, size_t count, DType dtype, int divisor) {
  if (divisor == 1) return;
  VisitDType(dtype, [&]<typename T>() {
    WithKernels([&]<typename K>() {
      K::template Divide<T>(static_cast<T*>(data), count, static_cast<T>(divisor));
    });
  });
}

void ReduceMany(const ReduceArgs& args) {
  if (args.count == 0) return;
  const bool two = args.nsrc == 2 && !args.stream && args.op != ReduceOp::kAvg;
  VisitDType(args.dtype, [&]<typename T>() {
    WithKernels([&]<typename K>() {
      two ? K::template Two<T>(args) : K::template Blocked<T>(args);
    });
  });
  if (args.stream) StoreFence();
}

void CopyBytes(void* dst, const void* src, size_t bytes, bool stream) {
  if (!stream) {
    std::memcpy(dst, src, bytes);
    return;
  }
  StreamCopy(static_cast<char*>(dst), static_cast<const char*>(src), bytes);
  StoreFence();
}

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kBaseline:
      break;
  }
  return "baseline";
}

std::vector<Isa> SupportedIsas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
    if (CpuRuns(isa)) isas.push_back(isa);
  }
  return isas;
}

Isa ActiveIsa() { return Active().load(std::memory_order_relaxed); }

void UseIsa(Isa isa) {
  FLOTILLA_ENFORCE(CpuRuns(isa), "reduction kernels: this CPU cannot run the ", IsaName(isa),
                   " instruction set (it runs ", IsaName(SupportedIsas().back()), " at most)");
  Active().store(isa, std::memory_order_relaxed);
}

}  // namespace flotilla::comm
