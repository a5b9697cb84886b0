// A data-parallel training loop that can be told to hang, for the
// observability tests: run under `flotilla launch --devices 0,1,2`.
//
//   hang_worker --steps 30                                   trains normally
//   hang_worker --sleep_rank 1 --sleep_step 5 --sleep_seconds 60
//       rank 1 sleeps inside the op debug_sleep at step 5, so the others
//       wait in the step's first all-reduce
//   hang_worker --skip_rank 1 --skip_step 5
//       rank 1 skips bucket 0's all-reduce at step 5 (a rank that took
//       another branch), so the ranks disagree on every collective after it
//
// Each step runs forward, backward and SGD, then averages each parameter
// across ranks, one all-reduce per parameter ("bucket" = its index).
// Prints "step N" and, at the injected fault, "sleeping at step N" /
// "skipping bucket 0 at step N" with a timestamp.
#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <random>
#include <thread>

#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/comm/process_group.h"
#include "flotilla/comm/tcp_store.h"
#include "flotilla/common/env.h"
#include "flotilla/common/job_secret.h"
#include "flotilla/common/logging.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/trace/activity.h"
#include "flotilla/trace/collective_tag.h"

using namespace flotilla;

namespace {

struct Flags {
  int steps = 30;
  int sleep_rank = -1, sleep_step = -1;
  double sleep_seconds = 0;
  int skip_rank = -1, skip_step = -1;
  std::string backend = "auto";
};
Flags g_flags;
int g_rank = 0;
int64_t g_step = 0;

void DebugSleepKernel(ExecutionContext&) {
  if (g_rank != g_flags.sleep_rank || g_step != g_flags.sleep_step) return;
  log::Info("sleeping at step {} for {} s", g_step, g_flags.sleep_seconds);
  std::this_thread::sleep_for(std::chrono::duration<double>(g_flags.sleep_seconds));
}

Variable BuildModel(Program& main) {
  auto x = layers::data("x", {16});
  auto y = layers::data("y", {1}, DType::kInt64);
  main.global_block().AppendOp(OpDesc("debug_sleep"));
  auto h = layers::fc(x, 32, 1, {}, {}, "relu");
  auto p = layers::fc(h, 2, 1, {}, {}, "softmax");
  return layers::mean(layers::cross_entropy(p, y));
}

FeedMap Batch(std::mt19937& rng) {
  Tensor x(DType::kFloat32, {32, 16}), y(DType::kInt64, {32, 1});
  std::normal_distribution<float> n;
  for (int64_t i = 0; i < x.numel(); ++i) x.mutable_data<float>()[i] = n(rng);
  for (int64_t i = 0; i < y.numel(); ++i) y.mutable_data<int64_t>()[i] = rng() % 2;
  return {{"x", x}, {"y", y}};
}

int Run() {
  RegisterAllOps();
  OpRegistry::Global().Register({.type = "debug_sleep",
                                 .kernels = {{Place::Kind::kCPU, DebugSleepKernel}}});
  g_rank = static_cast<int>(env::RequireInt("PADDLE_TRAINER_ID"));
  const int world = static_cast<int>(env::RequireInt("PADDLE_TRAINERS_NUM"));
  auto store = comm::ConnectStore(env::Require("PADDLE_MASTER"), [] {
    comm::TCPStoreOptions o;
    o.token = RequireJobSecret("hang_worker");
    o.tls = TlsFilesFromEnv();
    return o;
  }());
  auto group = comm::NewProcessGroup(store, g_rank, world, {.backend = g_flags.backend,
                                                          .name = "hang"});
  Program main, startup;
  ProgramGuard guard(main, startup);
  Variable loss = BuildModel(main);
  optimizer::SGD(0.01f).minimize(loss);
  Executor exe(CPUPlace());
  exe.run(startup);
  std::vector<std::string> params;
  for (const VarDesc* v : main.global_block().AllVars()) {
    if (v->persistable && v->name.find("learning_rate") == std::string::npos) params.push_back(v->name);
  }
  std::mt19937 rng(g_rank + 1);
  for (g_step = 1; g_step <= g_flags.steps; ++g_step) {
    exe.run(main, Batch(rng), {loss.name()});
    for (size_t b = 0; b < params.size(); ++b) {
      if (g_rank == g_flags.skip_rank && g_step == g_flags.skip_step && b == 0) {
        log::Info("skipping bucket 0 at step {}", g_step);
        continue;
      }
      trace::CollectiveTag tag(static_cast<int>(b));
      group->allreduce(*global_scope().FindVar(params[b])->GetMutableTensor(), comm::ReduceOp::kAvg);
    }
    std::cout << "step " << g_step << std::endl;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  log::InitFromEnv();
  CLI::App app{"a training loop that hangs on request"};
  app.add_option("--steps", g_flags.steps);
  app.add_option("--sleep_rank", g_flags.sleep_rank);
  app.add_option("--sleep_step", g_flags.sleep_step);
  app.add_option("--sleep_seconds", g_flags.sleep_seconds);
  app.add_option("--skip_rank", g_flags.skip_rank);
  app.add_option("--skip_step", g_flags.skip_step);
  app.add_option("--backend", g_flags.backend);
  CLI11_PARSE(app, argc, argv);
  try {
    return Run();
  } catch (const std::exception& e) {
    std::cerr << "hang_worker: " << e.what() << std::endl;
    return 1;
  }
}
