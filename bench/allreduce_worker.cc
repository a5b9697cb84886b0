#include "allreduce_worker.h"

#include <sched.h>

#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench_allreduce_timing.h"
#include "comm/reduce_kernels.h"
#include "comm/shm/shm_backend.h"
#include "flotilla/comm/prefix_store.h"
#include "flotilla/comm/process_group.h"
#include "flotilla/comm/tcp_store.h"
#include "flotilla/common/strings.h"

namespace flotilla::bench {
namespace {

using comm::ReduceOp;
constexpr DType kF32 = DType::kFloat32;

struct Buffers {
  std::vector<float> a, b;
};

// One collective of `bytes` (nccl-tests' meaning) on `g` (a ProcessGroup or
// a Backend: the same raw-buffer calls), with inputs that make a wrong
// result visible to Check.
template <typename G>
std::function<void()> MakeOp(G& g, const std::string& op, size_t bytes, int size, int rank,
                             Buffers& buf) {
  const size_t count = bytes / sizeof(float), part = count / size;
  buf.a.assign(count, float(rank + 1));
  buf.b.assign(count, 0.0f);
  float* a = buf.a.data();
  float* b = buf.b.data();
  if (op == "broadcast") return [=, &g] { g.broadcast(a, count, kF32, 0); };
  if (op == "allgather") return [=, &g] { g.allgather(a, b, part, kF32); };
  if (op == "reduce_scatter") {
    return [=, &g] { g.reduce_scatter(a, b, part, kF32, ReduceOp::kSum); };
  }
  if (op == "reduce") return [=, &g] { g.reduce(a, count, kF32, ReduceOp::kSum, 0); };
  return [=, &g] { g.allreduce(a, count, kF32, ReduceOp::kSum); };
}

// After the first run of `op`: is the result right?
bool Check(const std::string& op, const Buffers& buf, int size, int rank) {
  const float sum = float(size * (size + 1) / 2);
  const size_t part = buf.a.size() / size;
  if (op == "broadcast") return buf.a.back() == 1.0f;
  if (op == "allgather") return buf.b[(size - 1) * part] == float(size) && buf.b[0] == 1.0f;
  if (op == "reduce_scatter") return buf.b[part - 1] == sum;
  if (op == "reduce") return rank != 0 || buf.a.back() == sum;
  return buf.a[0] == sum && buf.a.back() == sum;
}

void PinToCore(int rank) {
  // One core per rank, as mpirun binds by default.
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(rank % std::max(1u, std::thread::hardware_concurrency()), &set);
  if (!getenv("FLOTILLA_BENCH_NO_PIN")) sched_setaffinity(0, sizeof(set), &set);
}

nlohmann::json PhasesJson(const std::string& op, size_t bytes, const comm::shm::ShmStats& d,
                          uint64_t ops) {
  auto us = [&](uint64_t ns) { return std::round(ns / 1e3 / ops * 10) / 10; };
  return {{"bench", op + "_phases"},
          {"impl", "shm"},
          {"bytes", bytes},
          {"isa", comm::IsaName(comm::ActiveIsa())},
          {"steps_per_op", double(d.steps) / ops},
          {"copy_in_us", us(d.copy_in_ns)},
          {"reduce_us", us(d.reduce_ns)},
          {"copy_out_us", us(d.copy_out_ns)},
          {"wait_us", us(d.wait.wait_ns)},
          {"waits_per_op", double(d.wait.waits) / ops},
          {"parks_per_op", double(d.wait.parks) / ops}};
}

comm::shm::ShmStats Minus(comm::shm::ShmStats a, const comm::shm::ShmStats& b) {
  a.steps -= b.steps;
  a.copy_in_ns -= b.copy_in_ns;
  a.reduce_ns -= b.reduce_ns;
  a.copy_out_ns -= b.copy_out_ns;
  a.wait.waits -= b.wait.waits;
  a.wait.parks -= b.wait.parks;
  a.wait.wait_ns -= b.wait.wait_ns;
  return a;
}

// Times every (op, size) on `g`; `after(op, bytes, ops)` runs after each.
template <typename G, typename After>
int TimeAll(const WorkerArgs& a, G& g, const After& after) {
  for (const auto& op : a.ops) {
    for (size_t bytes : AllreduceSizes()) {
      if (bytes > a.max_bytes || bytes < a.min_bytes) continue;
      Buffers buf;
      auto run = MakeOp(g, op, bytes, a.size, a.rank, buf);
      run();
      if (!Check(op, buf, a.size, a.rank)) {
        std::cerr << "bench_allreduce: wrong " << op << " result at " << bytes << " bytes\n";
        return 1;
      }
      uint64_t ops = 1;  // the checked run above
      auto counted = [&] { run(), ++ops; };
      double sec = MedianSecondsPerOp(bytes, counted, [&] { g.barrier(); });
      const std::string impl = a.label.empty() ? a.impl : a.label;
      if (a.rank == 0) std::cout << CollectiveJson(op, impl, bytes, a.size, sec) << std::endl;
      after(op, bytes, ops);
    }
  }
  g.barrier();
  return 0;
}

}  // namespace

int RunWorker(const WorkerArgs& a) {
  PinToCore(a.rank);
  std::unique_ptr<comm::TCPStoreServer> server;
  auto hp = ParseHostPort(a.store, "--store");
  if (a.host_store && a.rank == 0) server = comm::TCPStoreServer::Start(hp.host, hp.port);
  auto store = comm::ConnectStore(a.store);
  if (a.phases) {
    comm::shm::ShmOptions o;
    o.timeout = std::chrono::seconds(120);
    o.time_phases = true;
    comm::PrefixStore prefixed("bench_phases", store);
    comm::shm::ShmBackend shm(prefixed, a.rank, a.size, o);
    comm::shm::ShmStats before = shm.stats();
    return TimeAll(a, shm, [&](const std::string& op, size_t bytes, uint64_t ops) {
      comm::shm::ShmStats now = shm.stats();
      if (a.rank == 0) std::cout << PhasesJson(op, bytes, Minus(now, before), ops) << std::endl;
      before = now;
    });
  }
  comm::ProcessGroupOptions o;
  o.backend = a.impl;
  o.timeout = std::chrono::seconds(120);
  o.name = "bench_" + a.impl;
  if (!a.host_id.empty()) o.host_id = a.host_id;
  o.gloo_hostname = a.gloo_host;
  auto pg = comm::NewProcessGroup(store, a.rank, a.size, o);
  return TimeAll(a, *pg, [](const std::string&, size_t, uint64_t) {});
}

}  // namespace flotilla::bench
