// bench_blas: single-precision GEMM throughput of each candidate math backend
// on the shapes Flotilla's models run, at 1 and 2 threads, next to a large
// square GEMM that stands for the core's peak.
//
//   bench_blas [--backends a,b,...] [--threads 1,2] [--min_ms 60] [--trials 3]
//
// Backends (each measured in a child process of its own, so that thread pools
// and loaded libraries of one never run beside another's):
//   flotilla            math::Gemm as Flotilla runs it: its own OpenBLAS instance
//                       with the kernels the CPU's features call for (the
//                       kernels field is blas::KernelInfo())
//   flotilla:<Core>     the same with FLOTILLA_BLAS_CORETYPE=<Core> (SkylakeX, Haswell, ...)
//   openblas            libopenblas.so.0 dlopen()ed: the kernels OpenBLAS picks
//                       itself (OPENBLAS_CORETYPE of the environment, else its
//                       model table) — what a process that shares NumPy's gets
//   blis                BLIS's cblas_sgemm (libblis.so.4, Debian libblis4)
//   onednn              oneDNN's dnnl_sgemm (libdnnl.so.2, Debian libdnnl2); its
//                       threads are libgomp's, whose default waits spin: give it
//                       OMP_WAIT_POLICY=passive on a machine that is not idle
// A backend whose library is missing prints one {"skipped": ...} line.
//
// Prints JSON lines, one per backend × threads × shape:
//   {"bench":"blas_gemm","backend":"flotilla","threads":1,"model":"mlp",
//    "gemm":"nn 128x1280x1280","gflops":...,"of_peak":...}
// where of_peak is the fraction of the same backend's square GEMM at the same
// thread count and gflops_per_cpu_s the rate per second of the process's CPU
// time (steadier than wall time on a shared machine; at 2 threads it also
// charges threads that spin while they wait), and one
// {"bench":"blas_summary",...} line per backend × threads
// with the peak and the geometric mean of the model shapes' GFLOP/s (fit_a_line, a
// cost-of-a-call shape, left out).
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "flotilla/core/blas.h"
#include "flotilla/core/math.h"

namespace {

struct Shape {
  const char* model;
  bool ta, tb;
  int64_t m, n, k;
};

// The GEMMs of one training step (forward, backward-data, backward-filter /
// weight), as the ops call math::Gemm: fc is x[B,in]·W[in,out] (mul:
// math_ops.cc); conv is im2col W[oc,rows]·col[rows,cols] with cols grown to
// at least 512 by batching images (conv_kernels.cc).
const std::vector<Shape>& Shapes() {
  static const std::vector<Shape> shapes = {
      // seed 001's mlp, batch 128: 32 → 1280 → 1280 → 2
      {"mlp", false, false, 128, 1280, 32},
      {"mlp", false, false, 128, 1280, 1280},
      {"mlp", false, true, 128, 1280, 1280},
      {"mlp", true, false, 1280, 1280, 128},
      {"mlp", true, false, 32, 1280, 128},
      {"mlp", false, false, 128, 2, 1280},
      {"mlp", false, true, 128, 1280, 2},
      // wide&deep, batch 64: 26×8 + 13 = 221 → 400 → 400 → 400 → 1
      {"wide_deep", false, false, 64, 400, 221},
      {"wide_deep", false, false, 64, 400, 400},
      {"wide_deep", false, true, 64, 400, 400},
      {"wide_deep", true, false, 400, 400, 64},
      // ResNet-50, batch 8, 224²: conv1 7×7, one 3×3 and one 1×1 per stage
      {"resnet50", false, false, 64, 12544, 147},
      {"resnet50", false, true, 64, 147, 12544},
      {"resnet50", false, false, 64, 3136, 576},
      {"resnet50", true, false, 576, 3136, 64},
      {"resnet50", false, true, 64, 576, 3136},
      {"resnet50", false, false, 256, 3136, 64},
      {"resnet50", false, false, 128, 784, 1152},
      {"resnet50", false, false, 256, 588, 2304},
      {"resnet50", true, false, 2304, 588, 256},
      {"resnet50", false, true, 256, 2304, 588},
      {"resnet50", false, false, 256, 588, 1024},
      {"resnet50", false, false, 512, 392, 4608},
      // ResNet-18, batch 64, 32²
      {"resnet18", false, false, 64, 512, 147},
      {"resnet18", false, false, 64, 512, 576},
      {"resnet18", true, false, 576, 512, 64},
      {"resnet18", false, true, 64, 576, 512},
      {"resnet18", false, false, 128, 512, 1152},
      {"resnet18", false, false, 256, 256, 2304},
      {"resnet18", false, false, 512, 64, 4608},
      // seed 000's fit_a_line, batch 20: 13 → 1 (the cost of a call)
      {"fit_a_line", false, false, 20, 1, 13},
  };
  return shapes;
}

constexpr Shape kPeak = {"peak", false, false, 2048, 2048, 2048};

std::string Name(const Shape& s) {
  std::ostringstream o;
  o << (s.ta ? 't' : 'n') << (s.tb ? 't' : 'n') << ' ' << s.m << 'x' << s.n << 'x' << s.k;
  return o.str();
}

// Row-major C = A·B on one backend.
using GemmFn = std::function<void(const Shape&, const float*, const float*, float*)>;

struct Backend {
  std::string kernels;  // what the library says it runs
  GemmFn gemm;
  std::function<void(int)> set_threads;
};

using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                            int, float, float*, int);
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

GemmFn CblasGemm(CblasSgemm f) {
  return [f](const Shape& s, const float* a, const float* b, float* c) {
    f(kRowMajor, s.ta ? kTrans : kNoTrans, s.tb ? kTrans : kNoTrans, s.m, s.n, s.k, 1.0f, a,
      s.ta ? s.m : s.k, b, s.tb ? s.k : s.n, 0.0f, c, s.n);
  };
}

template <typename Fn>
Fn Sym(void* handle, const char* name) {
  void* p = dlsym(handle, name);
  if (p == nullptr) throw std::runtime_error(std::string("missing symbol ") + name);
  return reinterpret_cast<Fn>(p);
}

Backend OpenBlas(void* h) {
  Backend b;
  b.kernels = Sym<char* (*)()>(h, "openblas_get_corename")();
  b.gemm = CblasGemm(Sym<CblasSgemm>(h, "cblas_sgemm"));
  b.set_threads = Sym<void (*)(int)>(h, "openblas_set_num_threads");
  return b;
}

Backend Load(const std::string& name) {
  if (name.rfind("flotilla", 0) == 0) {  // "flotilla:<Core>": the parent set FLOTILLA_BLAS_CORETYPE
    Backend b;
    flotilla::blas::Kernels k = flotilla::blas::KernelInfo();
    b.kernels = k.core + (k.private_instance ? " (own instance)" : " (shared instance)");
    b.gemm = [](const Shape& s, const float* a, const float* bm, float* c) {
      flotilla::math::Gemm(s.ta, s.tb, s.m, s.n, s.k, 1.0f, a, s.ta ? s.m : s.k, bm, s.tb ? s.k : s.n, 0.0f, c,
                           s.n);
    };
    b.set_threads = [](int n) { flotilla::math::SetBlasThreads(n); };
    return b;
  }
  if (name == "openblas") {
    void* h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) throw std::runtime_error(dlerror());
    return OpenBlas(h);
  }
  if (name == "blis") {
    void* h = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) throw std::runtime_error(std::string(dlerror()) + " (scripts/install-deps.sh --bench)");
    Backend b;
    auto arch = Sym<int (*)()>(h, "bli_arch_query_id")();
    b.kernels = std::string(Sym<const char* (*)(int)>(h, "bli_arch_string")(arch)) + " (BLIS " +
                Sym<const char* (*)()>(h, "bli_info_get_version_str")() + ")";
    b.gemm = CblasGemm(Sym<CblasSgemm>(h, "cblas_sgemm"));
    auto set = Sym<void (*)(int64_t)>(h, "bli_thread_set_num_threads");
    b.set_threads = [set](int n) { set(n); };
    return b;
  }
  if (name == "onednn") {
    void* h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) throw std::runtime_error(std::string(dlerror()) + " (scripts/install-deps.sh --bench)");
    using Sgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                          int64_t, float, float*, int64_t);
    struct Version { int major, minor, patch; const char* hash; unsigned cpu_runtime, gpu_runtime; };
    Backend b;
    const Version* v = Sym<const Version* (*)()>(h, "dnnl_version")();
    int isa = Sym<int (*)()>(h, "dnnl_get_effective_cpu_isa")();
    b.kernels = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                std::to_string(v->patch) + " isa 0x" + [&] { std::ostringstream o; o << std::hex << isa; return o.str(); }();
    auto f = Sym<Sgemm>(h, "dnnl_sgemm");
    b.gemm = [f](const Shape& s, const float* a, const float* bm, float* c) {
      f(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.0f, a, s.ta ? s.m : s.k, bm, s.tb ? s.k : s.n, 0.0f,
        c, s.n);
    };
    b.set_threads = Sym<void (*)(int)>(h, "omp_set_num_threads");
    return b;
  }
  throw std::runtime_error("unknown backend '" + name + "'");
}

struct Options {
  std::vector<std::string> backends = {"flotilla", "openblas", "flotilla:Prescott", "flotilla:Sandybridge",
                                       "flotilla:Haswell", "flotilla:Zen", "flotilla:SkylakeX",
                                       "flotilla:Cooperlake", "blis", "onednn"};
  std::vector<int> threads = {1, 2};
  double min_ms = 60;
  int trials = 3;
  std::string only;  // set in a child: the one backend it measures
};

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--backends") o.backends = Split(v);
    else if (a == "--threads") { o.threads.clear(); for (auto& t : Split(v)) o.threads.push_back(std::stoi(t)); }
    else if (a == "--min_ms") o.min_ms = std::stod(v);
    else if (a == "--trials") o.trials = std::stoi(v);
    else if (a == "--only") o.only = v;
    else throw std::runtime_error("unknown flag '" + a + "' (expected --backends, --threads, --min_ms, --trials)");
    ++i;
  }
  return o;
}

struct Rate {
  double gflops;          // per second of wall time
  double gflops_per_cpu;  // per second of the process's CPU time, every thread's
  double us_per_call;
};

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// One shape: the median of `trials` runs of at least min_ms each.
Rate Measure(const Backend& b, const Shape& s, const Options& o, std::vector<float>& a,
               std::vector<float>& bm, std::vector<float>& c) {
  using Clock = std::chrono::steady_clock;
  const double flops = 2.0 * s.m * s.n * s.k;
  b.gemm(s, a.data(), bm.data(), c.data());  // warm: packing buffers, threads, caches
  std::vector<Rate> rates;
  for (int t = 0; t < o.trials; ++t) {
    int reps = 0;
    const double cpu0 = ProcessCpuSeconds();
    auto start = Clock::now();
    double ms = 0;
    do {
      b.gemm(s, a.data(), bm.data(), c.data());
      ++reps;
      ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    } while (ms < o.min_ms);
    const double cpu = ProcessCpuSeconds() - cpu0;
    rates.push_back({flops * reps / (ms * 1e6), flops * reps / (cpu * 1e9), ms * 1e3 / reps});
  }
  std::sort(rates.begin(), rates.end(), [](const Rate& x, const Rate& y) { return x.gflops < y.gflops; });
  return rates[rates.size() / 2];
}

double LoadAverage() {
  double l[1] = {0};
  return getloadavg(l, 1) == 1 ? l[0] : -1;
}

double Round(double x, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(x * scale) / scale;
}

void Emit(const nlohmann::json& j) { std::cout << j.dump() << std::endl; }

int RunOne(const Options& o) {
  Backend b;
  try {
    b = Load(o.only);
  } catch (const std::exception& e) {
    Emit({{"bench", "blas_gemm"}, {"backend", o.only}, {"skipped", e.what()}});
    return 0;
  }
  int64_t most = kPeak.m * kPeak.k;
  for (const Shape& s : Shapes()) most = std::max({most, s.m * s.k, s.k * s.n, s.m * s.n});
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(most), bm(most), c(most);
  for (auto& v : a) v = u(rng);
  for (auto& v : bm) v = u(rng);
  for (int threads : o.threads) {
    b.set_threads(threads);
    const Rate peak = Measure(b, kPeak, o, a, bm, c);
    double log_wall = 0, log_cpu = 0;
    int counted = 0;
    for (const Shape& s : Shapes()) {
      const Rate r = Measure(b, s, o, a, bm, c);
      if (s.model != std::string("fit_a_line")) {
        log_wall += std::log(r.gflops);
        log_cpu += std::log(r.gflops_per_cpu);
        ++counted;
      }
      Emit({{"bench", "blas_gemm"}, {"backend", o.only}, {"kernels", b.kernels}, {"threads", threads},
            {"model", s.model}, {"gemm", Name(s)}, {"gflops", Round(r.gflops, 1)},
            {"gflops_per_cpu_s", Round(r.gflops_per_cpu, 1)}, {"of_peak", Round(r.gflops / peak.gflops, 2)},
            {"us_per_call", Round(r.us_per_call, 2)}});
    }
    const double wall = std::exp(log_wall / counted), cpu = std::exp(log_cpu / counted);
    Emit({{"bench", "blas_summary"}, {"backend", o.only}, {"kernels", b.kernels}, {"threads", threads},
          {"peak_gemm", Name(kPeak)}, {"peak_gflops", Round(peak.gflops, 1)},
          {"peak_gflops_per_cpu_s", Round(peak.gflops_per_cpu, 1)}, {"models_geomean_gflops", Round(wall, 1)},
          {"models_geomean_gflops_per_cpu_s", Round(cpu, 1)}, {"models_geomean_of_peak", Round(wall / peak.gflops, 2)},
          {"load_average", Round(LoadAverage(), 2)}});
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options o = Parse(argc, argv);
    if (!o.only.empty()) return RunOne(o);
    char self[4096];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len <= 0) throw std::runtime_error("cannot read /proc/self/exe");
    self[len] = '\0';
    std::string threads;
    for (int t : o.threads) threads += (threads.empty() ? "" : ",") + std::to_string(t);
    for (const std::string& backend : o.backends) {
      // The same binary, one backend per process.
      const size_t colon = backend.find(':');
      std::string cmd = (backend.rfind("flotilla:", 0) == 0 ? "FLOTILLA_BLAS_CORETYPE='" + backend.substr(colon + 1) + "' "
                                                             : std::string()) +
                        "'" + self + "' --only '" + backend + "' --threads " + threads +
                        " --min_ms " + std::to_string(o.min_ms) + " --trials " + std::to_string(o.trials);
      std::fflush(stdout);
      if (std::system(cmd.c_str()) != 0) {
        std::cerr << "bench_blas: the child for " << backend << " failed\n";
        return 1;
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench_blas: " << e.what() << "\n";
    return 1;
  }
}
