// The kernel choice from CPU features, and Flotilla's OpenBLAS instance
// beside a shared one that another library loaded first with poor kernels
// (NumPy on a CPU newer than OpenBLAS's table). Its own binary: the shared
// instance must be loaded before Flotilla's.
#include "flotilla/core/blas.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "flotilla/core/math.h"

namespace flotilla::blas {
namespace {

CpuFeatures Avx512() {
  CpuFeatures f;
  f.sse3 = f.avx = f.fma = f.avx2 = true;
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512cd = true;
  return f;
}

TEST(OpenBlasCoreFor, FollowsFeaturesNotModels) {
  CpuFeatures f;
  EXPECT_EQ(OpenBlasCoreFor(f), "");
  f.sse3 = true;
  EXPECT_EQ(OpenBlasCoreFor(f), "Prescott");
  f.avx = true;
  EXPECT_EQ(OpenBlasCoreFor(f), "Sandybridge");
  f.avx2 = true;  // AVX2 without FMA: Haswell's kernels need both
  EXPECT_EQ(OpenBlasCoreFor(f), "Sandybridge");
  f.fma = true;
  EXPECT_EQ(OpenBlasCoreFor(f), "Haswell");
  EXPECT_EQ(OpenBlasCoreFor(Avx512()), "SkylakeX");
}

TEST(OpenBlasCoreFor, Avx512LackingASubsetRunsHaswell) {
  for (bool CpuFeatures::*subset : {&CpuFeatures::avx512f, &CpuFeatures::avx512bw, &CpuFeatures::avx512vl,
                                    &CpuFeatures::avx512dq, &CpuFeatures::avx512cd}) {
    CpuFeatures f = Avx512();
    f.*subset = false;
    EXPECT_FALSE(f.avx512_skylakex());
    EXPECT_EQ(OpenBlasCoreFor(f), "Haswell");
  }
}

TEST(CpuFeatures, NamesTheExtensions) {
  EXPECT_EQ(CpuFeatures().ToString(), "none");
  EXPECT_EQ(Avx512().ToString(), "AVX-512 (F BW VL DQ CD) FMA AVX2 AVX SSE3");
  CpuFeatures f;
  f.sse3 = f.avx = true;
  EXPECT_EQ(f.ToString(), "AVX SSE3");
}

TEST(CpuFeatures, AgreeWithTheCompilersView) {
#if defined(__x86_64__)
  const CpuFeatures f = DetectCpuFeatures();
  EXPECT_TRUE(f.sse3);  // every x86-64 CPU that runs Debian 12's OpenBLAS has it
  EXPECT_EQ(f.avx2, static_cast<bool>(__builtin_cpu_supports("avx2")));
  EXPECT_EQ(f.avx512_skylakex(), __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                                     __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                                     __builtin_cpu_supports("avx512cd"));
#endif
}

constexpr int kN = 96;
// cblas_sgemm's signature, row-major (101), no transposes (111).
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float,
                            float*, int);

// C = A·B for fixed n×n inputs, through `shared` when given, else math::Gemm.
std::vector<float> Product(CblasSgemm shared = nullptr, int n = kN) {
  std::vector<float> a(n * n), b(n * n), c(n * n);
  for (int64_t i = 0; i < int64_t{n} * n; ++i) {
    a[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f;
    b[i] = static_cast<float>((i * 104729) % 997) / 997.0f - 0.5f;
  }
  if (shared != nullptr) {
    shared(101, 111, 111, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  } else {
    math::Gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  }
  return c;
}

TEST(KernelInfo, OwnInstanceIgnoresTheSharedOnesKernels) {
  const std::string expected = OpenBlasCoreFor(DetectCpuFeatures());
  if (expected.empty()) GTEST_SKIP() << "not x86-64: OpenBLAS picks its own kernels";
  unsetenv("FLOTILLA_BLAS_CORETYPE");
  // What `OPENBLAS_CORETYPE=Prescott python3 -c "import numpy"` leaves behind.
  setenv("OPENBLAS_CORETYPE", "Prescott", 1);
  void* shared = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(shared, nullptr) << dlerror();
  auto shared_core = reinterpret_cast<char* (*)()>(dlsym(shared, "openblas_get_corename"));
  ASSERT_STREQ(shared_core(), "Prescott");

  const Kernels k = KernelInfo();
  EXPECT_EQ(k.core, expected);
  EXPECT_EQ(math::BlasCoreName(), expected);
  EXPECT_TRUE(k.private_instance);
  EXPECT_EQ(k.chosen_by, "CPU features");
  EXPECT_EQ(k.cpu, DetectCpuFeatures().ToString());
  EXPECT_EQ(k.library.rfind("OpenBLAS 0.", 0), 0u) << k.library;
  EXPECT_STREQ(std::getenv("OPENBLAS_CORETYPE"), "Prescott") << "the process's environment is left alone";
  EXPECT_STREQ(shared_core(), "Prescott");
  EXPECT_NE(k.ToString().find(expected + " kernels"), std::string::npos) << k.ToString();

  // Other kernels round differently: the bits tell SSE3 from AVX-512 work,
  // which is what tests/python/test_blas_kernels.py relies on.
  const std::vector<float> mine = Product();
  const std::vector<float> prescott = Product(reinterpret_cast<CblasSgemm>(dlsym(shared, "cblas_sgemm")));
  double most = 0;
  for (int i = 0; i < kN * kN; ++i) most = std::max(most, std::abs(double(mine[i]) - prescott[i]));
  EXPECT_LT(most, 1e-4);
  if (expected != "Prescott") {
    EXPECT_NE(mine, prescott);
  }
  math::SetBlasThreads(1);
  EXPECT_EQ(KernelInfo().threads, 1);
  dlclose(shared);
}

// A forked child runs threaded GEMMs: Flotilla's instance, which the
// child's fork() handlers would not otherwise reach, has stopped its threads
// before the fork, and the child starts its own.
TEST(KernelInfo, ForkedChildRunsThreadedGemms) {
  constexpr int kLarge = 512;  // large enough for OpenBLAS to use its threads
  math::SetBlasThreads(2);
  const std::vector<float> before = Product(nullptr, kLarge);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20);  // a child waiting on its parent's threads would hang here
    _exit(Product(nullptr, kLarge) == before ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status)) << "the child was killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(Product(nullptr, kLarge), before);
  math::SetBlasThreads(1);
}

}  // namespace
}  // namespace flotilla::blas
