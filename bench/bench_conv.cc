// Convolution speed on the CPU, side by side with PyTorch 1.13 (same thread
// count, same invocation; bench/baselines/torch_conv.py):
//   - the machine's measured GEMM peak (sgemm 2048^3, the ceiling of an
//     im2col convolution);
//   - conv2d forward + backward (input and filter gradients) on every
//     distinct layer shape of ResNet-50 at batch 8, 224x224 input, with
//     Flotilla's GFLOP/s and its fraction of the GEMM peak;
//   - a full ResNet-50 train step at batch 8 (224x224) and ResNet-18 at
//     32x32, batch 64 (Momentum, L2 decay, batch norm in training mode);
//   - 2-rank data-parallel ResNet-18 images/s against PyTorch DDP (gloo).
// Train steps also report CPU milliseconds per step (every thread of the
// process) and a "train_step_cpu" ratio of those: on a machine shared with
// other work, wall times swing with the load; CPU time is the work done.
// Prints one JSON line per measurement; comparison lines say
// "ratio":"flotilla/pytorch" with value = PyTorch's time / Flotilla's (> 1:
// Flotilla faster). Run under the bench lock:
//
//   flock /work/.bench.lock build/bin/bench_conv [--threads 2] [--repeats 3]
//        [--steps 3] [--no-torch] [--no-layers] [--no-steps] [--no-resnet18] [--no-resnet50]
//        [--no-dp] [--dp_steps 12] [--profile]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/core/math.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/models/resnet.h"
#include "framework/ops/conv_kernels.h"
#include "torch_peer.h"

namespace {

using namespace flotilla;
using Clock = std::chrono::steady_clock;

struct Options {
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  int repeats = 3;
  int steps = 3;
  bool torch = true, layers = true, train_steps = true;
  bool resnet18 = true, resnet50 = true;
  bool profile = false;  // milliseconds per op type (stderr)
  bool dp = true;        // 2-rank ResNet-18 vs PyTorch DDP
  int dp_steps = 12;
};

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) throw std::invalid_argument("flag " + a + " needs a value");
      return std::stoi(argv[++i]);
    };
    if (a == "--threads") o.threads = value();
    else if (a == "--repeats") o.repeats = value();
    else if (a == "--steps") o.steps = value();
    else if (a == "--no-torch") o.torch = false;
    else if (a == "--no-layers") o.layers = false;
    else if (a == "--no-steps") o.train_steps = false;
    else if (a == "--no-resnet18") o.resnet18 = false;
    else if (a == "--no-resnet50") o.resnet50 = false;
    else if (a == "--profile") o.profile = true;
    else if (a == "--no-dp") o.dp = false;
    else if (a == "--dp_steps") o.dp_steps = value();
    else throw std::invalid_argument("unknown flag '" + a + "'");
  }
  return o;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double CpuMs() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto ms = [](const timeval& t) { return double(t.tv_sec) * 1e3 + double(t.tv_usec) / 1e3; };
  return ms(u.ru_utime) + ms(u.ru_stime);
}

// Median CPU milliseconds (every thread of the process) of the last MedianMs
// call's runs: the cost of the work, which other processes on a busy machine
// do not inflate the way they inflate wall time.
double last_cpu_ms = 0;

template <typename Fn>
double MedianMs(int repeats, Fn&& fn) {
  fn();  // warm: scratch buffers, page faults
  std::vector<double> ms, cpu;
  for (int i = 0; i < repeats; ++i) {
    auto t = Clock::now();
    const double c = CpuMs();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
    cpu.push_back(CpuMs() - c);
  }
  last_cpu_ms = Median(cpu);
  return Median(ms);
}

double GemmPeakGflops(int repeats) {
  const int64_t n = 2048;
  std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n);
  double ms = MedianMs(repeats, [&] {
    math::Gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  });
  return 2.0 * n * n * n / (ms * 1e6);
}

// PyTorch's results, one JSON object per line of torch_conv.py.
std::vector<nlohmann::json> RunTorch(const Options& o, const std::string& args) {
  std::string cmd = flotilla::bench::TorchPeerEnv(o.threads) + "/usr/bin/python3 " + FLOTILLA_SOURCE_DIR + "/bench/baselines/torch_conv.py --threads " +
                    std::to_string(o.threads) + " --repeats " + std::to_string(o.repeats) + " " + args;
  std::vector<nlohmann::json> out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char line[4096];
  while (std::fgets(line, sizeof line, p)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object()) out.push_back(j);
  }
  pclose(p);
  return out;
}

struct Layer {
  std::string name;
  int64_t c, hw, k, kernel, stride;
};

// Every distinct conv shape of ResNet-50 (Paddle's layout: stride on the 3x3).
std::vector<Layer> ResNet50Layers() {
  std::vector<Layer> v{{"conv1", 3, 224, 64, 7, 2}};
  int64_t in = 64, hw = 56;
  const int64_t filters[] = {64, 128, 256, 512};
  for (int s = 0; s < 4; ++s) {
    const int64_t f = filters[s], stride = s == 0 ? 1 : 2, out_hw = hw / stride;
    const std::string st = "res" + std::to_string(s + 2);
    v.push_back({st + "a_branch2a", in, hw, f, 1, 1});
    v.push_back({st + "a_branch2b", f, hw, f, 3, stride});
    v.push_back({st + "a_branch2c", f, out_hw, 4 * f, 1, 1});
    v.push_back({st + "a_branch1", in, hw, 4 * f, 1, stride});
    v.push_back({st + "b_branch2a", 4 * f, out_hw, f, 1, 1});
    v.push_back({st + "b_branch2b", f, out_hw, f, 3, 1});
    in = 4 * f, hw = out_hw;
  }
  return v;
}

ops::conv::ConvGeometry Geometry(const Layer& l, int64_t batch) {
  ops::conv::ConvGeometry g;
  g.batch = batch, g.in_c = l.c, g.in_h = g.in_w = l.hw, g.out_c = l.k;
  g.k_h = g.k_w = l.kernel, g.stride_h = g.stride_w = l.stride;
  g.pad_top = g.pad_left = (l.kernel - 1) / 2;
  g.out_h = g.out_w = (l.hw + 2 * g.pad_top - l.kernel) / l.stride + 1;
  return g;
}

void BenchLayers(const Options& o, double peak) {
  const int64_t batch = 8;
  auto layers = ResNet50Layers();
  std::string specs;
  for (const Layer& l : layers) {
    specs += " " + std::to_string(batch) + "," + std::to_string(l.c) + "," + std::to_string(l.hw) + "," +
             std::to_string(l.hw) + "," + std::to_string(l.k) + "," + std::to_string(l.kernel) + "," +
             std::to_string(l.stride) + "," + std::to_string((l.kernel - 1) / 2);
  }
  auto torch = o.torch ? RunTorch(o, "layers" + specs) : std::vector<nlohmann::json>{};
  double ours_total = 0, torch_total = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    ops::conv::ConvGeometry g = Geometry(layers[i], batch);
    std::vector<float> x(batch * g.in_c * g.in_size(), 0.5f), w(g.out_c * g.col_rows(), 0.01f);
    std::vector<float> out(batch * g.out_c * g.out_size()), dx(x.size()), dw(w.size());
    double ms = MedianMs(o.repeats, [&] {
      ops::conv::ConvForward(g, x.data(), w.data(), out.data());
      ops::conv::ConvBackwardData(g, w.data(), out.data(), dx.data());
      ops::conv::ConvBackwardFilter(g, x.data(), out.data(), dw.data());
    });
    const double gflops = 3 * 2 * g.macs() / (ms * 1e6);
    nlohmann::json j = {{"bench", "conv2d"}, {"layer", layers[i].name}, {"batch", batch},
                        {"shape", std::to_string(layers[i].kernel) + "x" + std::to_string(layers[i].kernel) +
                                      " " + std::to_string(g.in_c) + "->" + std::to_string(g.out_c) + " @" +
                                      std::to_string(g.in_h) + " s" + std::to_string(g.stride_h)},
                        {"flotilla_ms", ms}, {"flotilla_gflops", gflops}, {"gemm_peak_fraction", gflops / peak}};
    ours_total += ms;
    if (i < torch.size()) {
      const double t = torch[i]["ms"].get<double>();
      torch_total += t;
      j["pytorch_ms"] = t;
      j["ratio"] = "flotilla/pytorch";
      j["value"] = t / ms;
    }
    std::cout << j.dump() << std::endl;
  }
  nlohmann::json sum = {{"bench", "conv2d_all_layers"}, {"batch", batch}, {"flotilla_ms", ours_total}};
  if (torch_total > 0) sum.update({{"pytorch_ms", torch_total}, {"ratio", "flotilla/pytorch"}, {"value", torch_total / ours_total}});
  std::cout << sum.dump() << std::endl;
}

double FlotillaStepMs(int depth, int64_t batch, int size, int steps, bool profile) {
  Program main, startup;
  ProgramGuard guard(main, startup);
  UniqueNameGuard names;
  auto image = layers::data("image", {3, size, size});
  auto label = layers::data("label", {1}, DType::kInt64);
  auto logits = models::ResNet(image, depth, size > 64 ? 1000 : 10);
  auto loss = layers::mean(layers::softmax_with_cross_entropy(logits, label));
  optimizer::Momentum opt(0.01f, 0.9f, false, regularizer::L2Decay(1e-4f));
  opt.minimize(loss);
  Executor exe;
  Scope scope;
  exe.Run(startup, {}, {}, &scope);
  std::mt19937 rng(0);
  std::normal_distribution<float> d;
  std::vector<float> x(batch * 3 * size * size);
  for (auto& v : x) v = d(rng);
  std::vector<int64_t> y(batch);
  for (int64_t i = 0; i < batch; ++i) y[i] = i % 10;
  FeedMap feed{{"image", Tensor::FromVector(x, {batch, 3, size, size})}, {"label", Tensor::FromVector(y, {batch, 1})}};
  std::map<std::string, double> per_type;
  if (profile) {
    exe.set_op_observer([&](const OpDesc& op, int64_t start, int64_t end) { per_type[op.type] += (end - start) / 1e6; });
  }
  const double ms = MedianMs(steps, [&] { exe.Run(main, feed, {}, &scope); });
  for (const auto& [type, total] : per_type) std::cerr << type << " " << total / (steps + 1) << " ms/step\n";
  return ms;
}

void BenchStep(const Options& o, int depth, int64_t batch, int size, int steps) {
  const std::string model = "resnet" + std::to_string(depth);
  const double ours = FlotillaStepMs(depth, batch, size, steps, o.profile), ours_cpu = last_cpu_ms;
  nlohmann::json j = {{"bench", "train_step"}, {"model", model}, {"batch", batch}, {"image", size},
                      {"threads", o.threads}, {"flotilla_ms", ours}, {"flotilla_cpu_ms", ours_cpu},
                      {"flotilla_images_per_sec", batch * 1e3 / ours}};
  std::cout << j.dump() << std::endl;
  if (!o.torch) return;
  auto torch = RunTorch(o, "step " + model + " " + std::to_string(batch) + " " + std::to_string(size) + " " +
                               std::to_string(steps) + " 1");
  if (torch.empty()) return;
  const double t = torch[0]["ms"].get<double>(), t_cpu = torch[0]["cpu_ms"].get<double>();
  std::cout << nlohmann::json{{"bench", "train_step"}, {"model", model}, {"batch", batch}, {"image", size},
                              {"pytorch_ms", t}, {"pytorch_cpu_ms", t_cpu},
                              {"pytorch_images_per_sec", batch * 1e3 / t}}.dump()
            << std::endl;
  std::cout << nlohmann::json{{"bench", "train_step_cpu"}, {"model", model}, {"ratio", "flotilla/pytorch"},
                              {"value", t_cpu / ours_cpu}, {"goal", ">= 1.0"}, {"met", t_cpu / ours_cpu >= 1.0}}.dump()
            << std::endl;
  std::cout << nlohmann::json{{"bench", "train_step"}, {"model", model}, {"ratio", "flotilla/pytorch"},
                              {"value", t / ours}, {"goal", ">= 1.0"}, {"met", t / ours >= 1.0}}.dump()
            << std::endl;
}

// The last JSON line of `cmd`'s output holding `key`.
nlohmann::json LastJsonWith(const std::string& cmd, const std::string& key) {
  nlohmann::json last;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return last;
  char line[8192];
  while (std::fgets(line, sizeof line, p)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains(key)) last = j;
  }
  pclose(p);
  return last;
}

// 2-rank data-parallel ResNet-18 (32x32, batch 64 per rank, one thread per
// rank): train_with_fleet under flotilla launch on the digits JPEGs (decoded
// by its reader threads, first step included) against PyTorch DDP (gloo) on
// in-memory tensors, warmup excluded — a comparison that favours PyTorch.
void BenchDataParallel(const Options& o) {
  const std::string src = FLOTILLA_SOURCE_DIR, bin = std::string(FLOTILLA_BUILD_DIR) + "/bin/";
  const std::string dir = "/tmp/bench_conv_digits." + std::to_string(getpid());
  if (std::system((src + "/scripts/make_digits_imagenet.sh " + dir + " --size 32 >/dev/null").c_str()) != 0) return;
  const std::string steps = std::to_string(o.dp_steps);
  std::vector<double> ours, theirs, ours_cpu, theirs_cpu;
  for (int r = 0; r < o.repeats; ++r) {
    auto f = LastJsonWith("OPENBLAS_NUM_THREADS=1 " + bin + "flotilla launch --nproc_per_node 2 --log_dir " + dir +
                              ".log " + bin + "train_with_fleet --model ResNet18 --data_dir " + dir +
                              " --image_size 32 --batch_size 64 --max_iter " + steps +
                              " --validate false --reader_thread 1 --print_step 1000 2>/dev/null",
                          "images_per_sec");
    if (!f.is_null()) {
      ours.push_back(f["images_per_sec"].get<double>());
      ours_cpu.push_back(f["rank0_cpu_ms_per_step"].get<double>());
    }
    if (!o.torch) continue;
    auto t = LastJsonWith(flotilla::bench::TorchPeerEnv(1) + "/usr/bin/python3 " + src + "/bench/baselines/torch_ddp.py --model resnet18 "
                          "--nprocs 2 --batch_size 64 --steps " + steps + " --warmup 2 --lr 0.01 2>/dev/null",
                          "samples_per_sec");
    if (!t.is_null()) {
      theirs.push_back(t["samples_per_sec"].get<double>());
      theirs_cpu.push_back(t["rank0_cpu_ms_per_step"].get<double>());
    }
  }
  std::system(("rm -rf " + dir + " " + dir + ".log").c_str());
  if (ours.empty()) return;
  std::cout << nlohmann::json{{"bench", "ddp"}, {"impl", "flotilla"}, {"model", "resnet18"}, {"image", 32},
                              {"batch_per_rank", 64}, {"ranks", 2}, {"images_per_sec", Median(ours)},
                              {"rank0_cpu_ms_per_step", Median(ours_cpu)}}.dump()
            << std::endl;
  if (theirs.empty()) return;
  std::cout << nlohmann::json{{"bench", "ddp"}, {"impl", "pytorch_ddp"}, {"model", "resnet18"}, {"image", 32},
                              {"batch_per_rank", 64}, {"ranks", 2}, {"images_per_sec", Median(theirs)},
                              {"rank0_cpu_ms_per_step", Median(theirs_cpu)}}.dump()
            << std::endl;
  const double c = Median(theirs_cpu) / Median(ours_cpu);
  std::cout << nlohmann::json{{"bench", "ddp_cpu"}, {"model", "resnet18"}, {"ranks", 2}, {"ratio", "flotilla/pytorch"},
                              {"value", c}, {"goal", ">= 1.2"}, {"met", c >= 1.2}}.dump()
            << std::endl;
  const double v = Median(ours) / Median(theirs);
  std::cout << nlohmann::json{{"bench", "ddp"}, {"model", "resnet18"}, {"ranks", 2}, {"ratio", "flotilla/pytorch"},
                              {"value", v}, {"goal", ">= 1.2"}, {"met", v >= 1.2}}.dump()
            << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options o = ParseArgs(argc, argv);
    RegisterAllOps();
    math::SetBlasThreads(o.threads);
    const double peak = GemmPeakGflops(o.repeats);
    std::cout << nlohmann::json{{"bench", "gemm_peak"}, {"threads", o.threads}, {"n", 2048}, {"gflops", peak},
                                {"blas_core", math::BlasCoreName()}}.dump()
              << std::endl;
    if (o.layers) BenchLayers(o, peak);
    if (o.train_steps) {
      if (o.resnet18) BenchStep(o, 18, 64, 32, std::max(o.steps, 5));
      if (o.resnet50) BenchStep(o, 50, 8, 224, o.steps);
    }
    if (o.dp) BenchDataParallel(o);
  } catch (const std::exception& e) {
    std::cerr << "bench_conv: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
