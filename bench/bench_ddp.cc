// Data-parallel training throughput: seed 001's mlp (32 → 1280 tanh → 1280
// tanh → 2 softmax, SGD 0.01, batch 128 per rank) at 1 and 2 ranks, Flotilla
// (train_with_fleet under `flotilla launch`, the seed's tuning flags) side by
// side with PyTorch DDP (gloo, bench/baselines/torch_ddp.py) in the same
// invocation, runs interleaved, one compute thread per rank. Prints one JSON
// line per implementation and rank count (median and best samples/s over
// --repeats, summed over ranks, and rank 0's CPU milliseconds per step — every thread
// of the process, the cost of a step that does not depend on how busy the
// machine is) and one with the ratios.
//
// With --tracing it runs Flotilla alone, without and with --timeline
// (every rank writing its timeline, the launcher merging them), alternating,
// and prints the overhead on rank 0's CPU time per step.
//
//   bench_ddp [--steps 100] [--warmup 10] [--repeats 3] [--ranks 1,2] [--no-torch] [--tracing]
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "torch_peer.h"

namespace {

struct Options {
  int steps = 100;
  int warmup = 10;
  int repeats = 3;
  std::vector<int> ranks = {1, 2};
  bool torch = true;
  bool tracing = false;
  std::string extra;  // more train_with_fleet flags
};

std::vector<int> ParseRanks(const std::string& s) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    out.push_back(std::stoi(s.substr(pos, comma - pos)));
    pos = comma == std::string::npos ? s.size() : comma + 1;
  }
  return out;
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("flag " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--steps") o.steps = std::stoi(value());
    else if (a == "--warmup") o.warmup = std::stoi(value());
    else if (a == "--repeats") o.repeats = std::stoi(value());
    else if (a == "--ranks") o.ranks = ParseRanks(value());
    else if (a == "--flotilla_args") o.extra = value();
    else if (a == "--no-torch") o.torch = false;
    else if (a == "--tracing") o.tracing = true;
    else throw std::invalid_argument("unknown flag '" + a + "' (expected --steps, --warmup, "
                                     "--repeats, --ranks, --flotilla_args, --no-torch)");
  }
  return o;
}

// Runs `cmd` and returns the last stdout line that is a JSON object with
// samples_per_sec; throws naming the command when there is none.
nlohmann::json RunForJson(const std::string& cmd) {
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run: " + cmd);
  std::array<char, 4096> buf{};
  nlohmann::json last;
  while (fgets(buf.data(), buf.size(), pipe) != nullptr) {
    std::string line(buf.data());
    if (line.empty() || line[0] != '{') continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.contains("samples_per_sec")) last = j;
  }
  int status = pclose(pipe);
  if (status != 0 || last.is_null()) {
    throw std::runtime_error("no result (exit status " + std::to_string(status) + ") from: " + cmd);
  }
  return last;
}

std::string Devices(int n) {
  std::string d;
  for (int i = 0; i < n; ++i) d += (i ? "," : "") + std::to_string(i);
  return d;
}

std::string FlotillaCommand(const Options& o, int n, bool traced = false) {
  std::string bin = std::string(FLOTILLA_BUILD_DIR) + "/bin/";
  const std::string logs = "/tmp/bench_ddp_logs." + std::to_string(getpid());
  return "OPENBLAS_NUM_THREADS=1 " + bin + "flotilla launch --devices " + Devices(n) +
         " --log_dir " + logs + (traced ? " --timeline " + logs + "/job.json" : "") + " " + bin +
         "train_with_fleet --steps " + std::to_string(o.steps) + " --warmup " +
         std::to_string(o.warmup) + " " + o.extra + " 2>/dev/null";
}

std::string TorchCommand(const Options& o, int n) {
  return flotilla::bench::TorchPeerEnv(1) + "/usr/bin/python3 " + std::string(FLOTILLA_SOURCE_DIR) +
         "/bench/baselines/torch_ddp.py --nprocs " + std::to_string(n) + " --steps " +
         std::to_string(o.steps) + " --warmup " + std::to_string(o.warmup) + " 2>/dev/null";
}

// The fastest run: on a shared machine, the one least disturbed by others.
double Best(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Measure {
  std::vector<double> rate, cpu_ms;
  void Add(const nlohmann::json& j) {
    rate.push_back(j["samples_per_sec"].get<double>());
    cpu_ms.push_back(j["rank0_cpu_ms_per_step"].get<double>());
  }
};

void Report(const char* impl, int n, const Options& o, const Measure& m) {
  nlohmann::json j = {{"bench", "ddp"}, {"impl", impl}, {"model", "mlp"}, {"hidden", 1280},
                      {"batch_per_rank", 128}, {"ranks", n}, {"threads_per_rank", 1},
                      {"steps", o.steps}, {"repeats", m.rate.size()},
                      {"samples_per_sec", Median(m.rate)}, {"best_samples_per_sec", Best(m.rate)},
                      {"rank0_cpu_ms_per_step", Median(m.cpu_ms)}};
  std::cout << j.dump() << std::endl;
}

}  // namespace

// Without and with --timeline, alternating.
void TracingOverhead(const Options& o, int n) {
  Measure plain, traced;
  for (int r = 0; r < o.repeats; ++r) {
    plain.Add(RunForJson(FlotillaCommand(o, n)));
    traced.Add(RunForJson(FlotillaCommand(o, n, true)));
  }
  Report("flotilla", n, o, plain);
  Report("flotilla traced", n, o, traced);
  const double overhead = Median(traced.cpu_ms) / Median(plain.cpu_ms);
  std::cout << nlohmann::json({{"bench", "ddp"}, {"ranks", n}, {"overhead", "traced/untraced"},
                               {"value", overhead}, {"goal", "<= 1.02"}, {"met", overhead <= 1.02},
                               {"samples_per_sec_ratio", Median(traced.rate) / Median(plain.rate)}})
                   .dump()
            << std::endl;
}

int main(int argc, char** argv) {
  try {
    Options o = ParseArgs(argc, argv);
    if (o.tracing) {
      for (int n : o.ranks) TracingOverhead(o, n);
      return 0;
    }
    for (int n : o.ranks) {
      Measure ours, theirs;
      for (int r = 0; r < o.repeats; ++r) {
        ours.Add(RunForJson(FlotillaCommand(o, n)));
        if (o.torch) theirs.Add(RunForJson(TorchCommand(o, n)));
      }
      Report("flotilla", n, o, ours);
      if (!o.torch) continue;
      Report("pytorch_ddp", n, o, theirs);
      nlohmann::json ratio = {
          {"bench", "ddp"}, {"ranks", n},
          {"ratio_flotilla_over_pytorch", Median(ours.rate) / Median(theirs.rate)},
          {"best_ratio_flotilla_over_pytorch", Best(ours.rate) / Best(theirs.rate)},
          {"cpu_per_step_ratio_pytorch_over_flotilla", Median(theirs.cpu_ms) / Median(ours.cpu_ms)}};
      std::cout << ratio.dump() << std::endl;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench_ddp: " << e.what() << std::endl;
    return 1;
  }
}
