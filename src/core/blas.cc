#include "core/blas.h"

#include <dlfcn.h>

#include <cstdlib>

#include "flotilla/common/enforce.h"

namespace flotilla::math::internal {
namespace {

constexpr const char* kLibrary = "libopenblas.so.0";

bool HasSkylakeXFeatures() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512cd");
}

template <typename Fn>
Fn Resolve(void* handle, const char* name) {
  void* sym = dlsym(handle, name);
  FLOTILLA_CHECK(sym != nullptr, Unavailable, kLibrary, " has no symbol ", name);
  return reinterpret_cast<Fn>(sym);
}

BlasApi Load() {
  __builtin_cpu_init();
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr && HasSkylakeXFeatures()) {
    setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
  }
  void* handle = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  FLOTILLA_CHECK(handle != nullptr, Unavailable, "cannot load ", kLibrary,
                 " (Debian package libopenblas0): ", dlerror());
  BlasApi api;
  api.sgemm = Resolve<decltype(api.sgemm)>(handle, "cblas_sgemm");
  api.dgemm = Resolve<decltype(api.dgemm)>(handle, "cblas_dgemm");
  api.set_num_threads = Resolve<decltype(api.set_num_threads)>(handle, "openblas_set_num_threads");
  api.get_corename = Resolve<decltype(api.get_corename)>(handle, "openblas_get_corename");
  return api;  // the library stays loaded for the life of the process
}

}  // namespace

const BlasApi& Blas() {
  static const BlasApi api = Load();
  return api;
}

}  // namespace flotilla::math::internal
