// py_blas_probe: the C++ side of test_blas_kernels.py. Prints one JSON object:
// this process's blas::KernelInfo() and an FNV-1a digest of the bits of
// C = A·B (M×K by K×N, float32, through math::Gemm) on the fixed inputs
//   A[i] = ((i·7919) mod 1000)/1000 − 0.5,  B[i] = ((i·104729) mod 997)/997 − 0.5
// (i the row-major index), which the Python side builds with NumPy.
//
//   py_blas_probe M K N
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "flotilla/core/blas.h"
#include "flotilla/core/math.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: py_blas_probe M K N\n";
    return 1;
  }
  const int64_t m = std::stoll(argv[1]), k = std::stoll(argv[2]), n = std::stoll(argv[3]);
  std::vector<float> a(m * k), b(k * n), c(m * n);
  for (int64_t i = 0; i < m * k; ++i) a[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f;
  for (int64_t i = 0; i < k * n; ++i) b[i] = static_cast<float>((i * 104729) % 997) / 997.0f - 0.5f;
  flotilla::math::Gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
  uint64_t digest = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(c.data());
  for (size_t i = 0; i < c.size() * sizeof(float); ++i) digest = (digest ^ bytes[i]) * 1099511628211ull;
  const flotilla::blas::Kernels info = flotilla::blas::KernelInfo();
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(digest));
  std::cout << nlohmann::json({{"core", info.core}, {"chosen_by", info.chosen_by}, {"library", info.library},
                               {"private_instance", info.private_instance}, {"threads", info.threads},
                               {"digest", hex}})
                   .dump()
            << std::endl;
  return 0;
}
