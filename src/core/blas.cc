#include "core/blas.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <strings.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "flotilla/common/enforce.h"

namespace flotilla::blas {

std::string CpuFeatures::ToString() const {
  std::string out;
  auto add = [&out](bool on, const char* name) {
    if (on) out += (out.empty() ? "" : " ") + std::string(name);
  };
  std::string avx512;
  for (auto [on, name] : {std::pair{avx512f, "F"}, {avx512bw, "BW"}, {avx512vl, "VL"}, {avx512dq, "DQ"},
                          {avx512cd, "CD"}}) {
    if (on) avx512 += (avx512.empty() ? "" : " ") + std::string(name);
  }
  add(!avx512.empty(), ("AVX-512 (" + avx512 + ")").c_str());
  add(fma, "FMA");
  add(avx2, "AVX2");
  add(avx, "AVX");
  add(sse3, "SSE3");
  return out.empty() ? "none" : out;
}

CpuFeatures DetectCpuFeatures() {
  CpuFeatures f;
#if defined(__x86_64__)
  // libgcc's answers include the operating system's consent (XCR0), so an
  // AVX-512 CPU under a kernel or hypervisor that hides those registers
  // reads as AVX2.
  __builtin_cpu_init();
  f.sse3 = __builtin_cpu_supports("sse3");
  f.avx = __builtin_cpu_supports("avx");
  f.fma = __builtin_cpu_supports("fma");
  f.avx2 = __builtin_cpu_supports("avx2");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512cd = __builtin_cpu_supports("avx512cd");
#endif
  return f;
}

std::string OpenBlasCoreFor(const CpuFeatures& f) {
  if (f.avx512_skylakex()) return "SkylakeX";
  if (f.avx2 && f.fma) return "Haswell";
  if (f.avx) return "Sandybridge";
  if (f.sse3) return "Prescott";
  return "";
}

std::string Kernels::ToString() const {
  std::ostringstream o;
  o << library << ", " << core << " kernels (by " << chosen_by << "; CPU: " << cpu << "), "
    << (private_instance ? "private instance" : "shared instance") << ", " << threads
    << (threads == 1 ? " thread" : " threads");
  return o.str();
}

Kernels KernelInfo() {
  const math::internal::BlasApi& api = math::internal::Blas();
  Kernels k = api.kernels;
  k.core = api.get_corename();
  k.threads = api.get_num_threads();
  if (!api.requested_core.empty() && strcasecmp(k.core.c_str(), api.requested_core.c_str()) != 0) {
    // OpenBLAS ignores a core type it does not know and reads its table.
    k.chosen_by = "OpenBLAS's own CPU table (" + k.chosen_by + " asked for '" + api.requested_core +
                  "', which it does not know)";
  }
  return k;
}

}  // namespace flotilla::blas

namespace flotilla::math::internal {
namespace {

constexpr const char* kLibrary = "libopenblas.so.0";
constexpr const char* kCoreVariable = "FLOTILLA_BLAS_CORETYPE";

template <typename Fn>
Fn Resolve(void* handle, const char* name) {
  void* sym = dlsym(handle, name);
  FLOTILLA_CHECK(sym != nullptr, Unavailable, kLibrary, " has no symbol ", name);
  return reinterpret_cast<Fn>(sym);
}

// Opens OpenBLAS in a new link-map namespace whose C library reads this
// process's environment with OPENBLAS_CORETYPE=core: OpenBLAS picks its
// kernels from that variable while it loads. The process's own environment
// is untouched (the namespace gets a copy that lives as long as the
// process). Null when the namespace cannot be made.
void* OpenPrivate(const std::string& core) {
  void* libc = dlmopen(LM_ID_NEWLM, "libc.so.6", RTLD_NOW | RTLD_LOCAL);
  if (libc == nullptr) return nullptr;
  Lmid_t ns = 0;
  auto* environ_of_ns = static_cast<char***>(dlsym(libc, "environ"));
  if (dlinfo(libc, RTLD_DI_LMID, &ns) != 0 || environ_of_ns == nullptr) return nullptr;
  static std::vector<std::string> strings;
  static std::vector<char*> pointers;
  for (char** e = *environ_of_ns; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, "OPENBLAS_CORETYPE=", 18) != 0) strings.emplace_back(*e);
  }
  if (!core.empty()) strings.push_back("OPENBLAS_CORETYPE=" + core);
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  *environ_of_ns = pointers.data();
  return dlmopen(ns, kLibrary, RTLD_NOW | RTLD_LOCAL);
}

// OpenBLAS stops its threads before a fork() (pthread_atfork) so that the
// child can start its own; a handler registered from the private namespace
// sits in that namespace's C library, which the process's fork() never
// runs. The process's C library runs this one.
int (*private_thread_shutdown)() = nullptr;
void ShutDownPrivateThreads() { private_thread_shutdown(); }

BlasApi Load() {
  const blas::CpuFeatures cpu = blas::DetectCpuFeatures();
  const char* forced = std::getenv(kCoreVariable);
  const bool by_variable = forced != nullptr && *forced != '\0';
  const std::string core = by_variable ? forced : blas::OpenBlasCoreFor(cpu);
  blas::Kernels k;
  k.cpu = cpu.ToString();
  k.chosen_by = by_variable ? kCoreVariable : core.empty() ? "OpenBLAS's own CPU table" : "CPU features";
  void* handle = OpenPrivate(core);
  k.private_instance = handle != nullptr;
  if (handle == nullptr) {
    // No namespace to spare (glibc has 16, each with static TLS to find):
    // the process's shared instance, with whatever kernels it was loaded with.
    const char* why = dlerror();
    k.chosen_by = std::string("whoever loaded the shared instance (no namespace of Flotilla's own: ") +
                  (why != nullptr ? why : "dlmopen failed") + ")";
    handle = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  }
  FLOTILLA_CHECK(handle != nullptr, Unavailable, "cannot load ", kLibrary,
                 " (Debian package libopenblas0): ", dlerror());
  BlasApi api;
  api.sgemm = Resolve<decltype(api.sgemm)>(handle, "cblas_sgemm");
  api.dgemm = Resolve<decltype(api.dgemm)>(handle, "cblas_dgemm");
  api.set_num_threads = Resolve<decltype(api.set_num_threads)>(handle, "openblas_set_num_threads");
  api.get_num_threads = Resolve<decltype(api.get_num_threads)>(handle, "openblas_get_num_threads");
  api.get_corename = Resolve<decltype(api.get_corename)>(handle, "openblas_get_corename");
  if (k.private_instance) {
    private_thread_shutdown = Resolve<int (*)()>(handle, "blas_thread_shutdown_");
    pthread_atfork(ShutDownPrivateThreads, nullptr, nullptr);
  }
  // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY ...": the name and version.
  std::istringstream config(Resolve<char* (*)()>(handle, "openblas_get_config")());
  std::string name, version;
  config >> name >> version;
  k.library = name + " " + version;
  api.kernels = k;
  if (k.private_instance) api.requested_core = core;
  return api;  // the library stays loaded for the life of the process
}

}  // namespace

const BlasApi& Blas() {
  static const BlasApi api = Load();
  return api;
}

}  // namespace flotilla::math::internal
