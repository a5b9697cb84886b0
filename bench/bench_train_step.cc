// Steps per second of seed 001's mlp (32 → 1280 tanh → 1280 tanh → 2
// softmax, cross_entropy, SGD 0.01, batch 128) in one process with one BLAS
// thread, side by side with the same model in PyTorch (torch_mlp.py) run in
// the same invocation. Prints one JSON line per implementation and a ratio.
// With --tracing it measures Flotilla alone, untraced and with a timeline
// being written, alternating, and prints the overhead (CPU time per step of
// the whole process, the trace thread included).
//
//   bench_train_step [--steps 100] [--repeats 3] [--hidden 1280] [--no-torch] [--tracing]
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <tuple>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/core/math.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/trace/trace.h"
#include "torch_peer.h"

namespace {

using namespace flotilla;

struct Options {
  int steps = 100;
  int warmup = 10;
  int repeats = 5;
  int hidden = 1280;
  int batch = 128;
  bool torch = true;
  bool tracing = false;
};

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::stoi(argv[++i]) : 0; };
    if (a == "--steps") o.steps = next();
    else if (a == "--repeats") o.repeats = next();
    else if (a == "--hidden") o.hidden = next();
    else if (a == "--batch_size") o.batch = next();
    else if (a == "--no-torch") o.torch = false;
    else if (a == "--tracing") o.tracing = true;
    else throw InvalidArgument("unknown flag '" + a + "' (expected --steps, --repeats, --hidden, --batch_size, --no-torch, --tracing)");
  }
  return o;
}

// The seed's mlp, built once; Measure() times `steps` training steps.
class FlotillaMlp {
 public:
  explicit FlotillaMlp(const Options& o) : o_(o) {
    RegisterAllOps();
    math::SetBlasThreads(1);
    ProgramGuard guard(main_, startup_);
    auto x = layers::data("x", {32});
    auto y = layers::data("y", {1}, DType::kInt64);
    auto h1 = layers::fc(x, o.hidden, 1, {}, {}, "tanh");
    auto h2 = layers::fc(h1, o.hidden, 1, {}, {}, "tanh");
    auto prob = layers::fc(h2, 2, 1, {}, {}, "softmax");
    loss_ = layers::mean(layers::cross_entropy(prob, y)).name();
    optimizer::SGD(0.01f).minimize(main_.global_block().GetVariable(loss_));
    std::mt19937 rng(0);
    std::uniform_real_distribution<float> u(0, 1);
    std::vector<float> xs(o.batch * 32);
    std::vector<int64_t> ys(o.batch);
    for (auto& v : xs) v = u(rng);
    for (auto& v : ys) v = rng() % 2;
    feed_ = {{"x", Tensor::FromVector(xs, {o.batch, 32})}, {"y", Tensor::FromVector(ys, {o.batch, 1})}};
    exe_.Run(startup_, {}, {}, &scope_);
    for (int i = 0; i < o.warmup; ++i) exe_.Run(main_, feed_, {loss_}, &scope_);
  }

  double Measure() {
    auto start = std::chrono::steady_clock::now();
    const double cpu0 = ProcessCpuSeconds();
    for (int i = 0; i < o_.steps; ++i) exe_.Run(main_, feed_, {loss_}, &scope_);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    last_cpu_ms_per_step_ = (ProcessCpuSeconds() - cpu0) * 1000 / o_.steps;
    return o_.steps / secs;
  }
  // CPU milliseconds per step of the last Measure(), every thread included.
  double last_cpu_ms_per_step() const { return last_cpu_ms_per_step_; }

  static double ProcessCpuSeconds() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
  }

 private:
  Options o_;
  Program main_, startup_;
  std::string loss_;
  FeedMap feed_;
  Executor exe_;
  Scope scope_;
  double last_cpu_ms_per_step_ = 0;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs the PyTorch peer and returns its JSON line (null when unavailable).
nlohmann::json TorchResult(const Options& o) {
  std::string script = std::string(FLOTILLA_SOURCE_DIR) + "/bench/baselines/torch_mlp.py";
  std::string cmd = flotilla::bench::TorchPeerEnv(1) + "/usr/bin/python3 " + script + " --steps " +
                    std::to_string(o.steps) + " --repeats 1" +
                    " --hidden " + std::to_string(o.hidden) + " --batch_size " +
                    std::to_string(o.batch) + " 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return nullptr;
  std::string out;
  char buf[4096];
  while (fgets(buf, sizeof(buf), pipe) != nullptr) out += buf;
  int rc = pclose(pipe);
  if (rc != 0 || out.empty()) return nullptr;
  return nlohmann::json::parse(out.substr(0, out.find('\n')));
}

// Untraced and traced (a timeline written to /tmp), alternating.
int TracingOverhead(const Options& o, FlotillaMlp& mlp) {
  const std::string path = "/tmp/bench_train_step_trace." + std::to_string(getpid()) + ".json";
  std::vector<double> off_rate, on_rate, off_cpu, on_cpu;
  for (int r = 0; r < o.repeats; ++r) {
    off_rate.push_back(mlp.Measure());
    off_cpu.push_back(mlp.last_cpu_ms_per_step());
    trace::StartTimeline(path);
    on_rate.push_back(mlp.Measure());
    trace::StopTimeline();
    on_cpu.push_back(mlp.last_cpu_ms_per_step());
  }
  std::remove(path.c_str());
  for (auto [impl, rate, cpu] : {std::tuple{"flotilla", &off_rate, &off_cpu},
                                 std::tuple{"flotilla traced", &on_rate, &on_cpu}}) {
    std::cout << nlohmann::json({{"bench", "train_step"}, {"impl", impl}, {"model", "mlp"},
                                 {"hidden", o.hidden}, {"batch", o.batch}, {"threads", 1},
                                 {"repeats", o.repeats}, {"steps_per_sec", Median(*rate)},
                                 {"cpu_ms_per_step", Median(*cpu)}})
                     .dump()
              << std::endl;
  }
  const double overhead = Median(on_cpu) / Median(off_cpu);
  std::cout << nlohmann::json({{"bench", "train_step"}, {"model", "mlp"},
                               {"overhead", "traced/untraced"}, {"value", overhead},
                               {"goal", "<= 1.02"}, {"met", overhead <= 1.02}})
                   .dump()
            << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options o = ParseArgs(argc, argv);
    // Repeats alternate between the peers so that load on this noisy
    // machine hits both alike; each reports the median of its repeats.
    FlotillaMlp mlp(o);
    if (o.tracing) return TracingOverhead(o, mlp);
    std::vector<double> mine_rates, torch_rates;
    std::vector<double> mine_cpu;
    nlohmann::json torch = nullptr;
    for (int r = 0; r < o.repeats; ++r) {
      if (o.torch) {
        nlohmann::json t = TorchResult(o);
        if (!t.is_null()) {
          torch = t;
          torch_rates.push_back(t["steps_per_sec"].get<double>());
        }
      }
      mine_rates.push_back(mlp.Measure());
      mine_cpu.push_back(mlp.last_cpu_ms_per_step());
    }
    double flotilla = Median(mine_rates);
    if (!torch.is_null()) torch["steps_per_sec"] = Median(torch_rates);
    nlohmann::json mine = {{"bench", "train_step"}, {"impl", "flotilla"}, {"model", "mlp"},
                           {"hidden", o.hidden},    {"batch", o.batch},   {"threads", 1},
                           {"steps_per_sec", flotilla}, {"cpu_ms_per_step", Median(mine_cpu)}};
    std::cout << mine.dump() << std::endl;
    if (torch.is_null()) {
      std::cout << nlohmann::json({{"bench", "train_step"}, {"impl", "pytorch"},
                                   {"skipped", "python3-torch not available (scripts/install-deps.sh --bench)"}})
                       .dump()
                << std::endl;
      return 0;
    }
    torch.update(flotilla::bench::KernelsJson());
    std::cout << torch.dump() << std::endl;
    double ratio = flotilla / torch["steps_per_sec"].get<double>();
    std::cout << nlohmann::json({{"bench", "train_step"}, {"model", "mlp"}, {"ratio", "flotilla/pytorch"},
                                 {"value", ratio}, {"goal", ">= 1.3"}, {"met", ratio >= 1.3}})
                     .dump()
              << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "bench_train_step: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
