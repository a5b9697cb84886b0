// bench_ps: parameter-server RPC cost next to raw gRPC moving the same bytes.
//
// In-process servers on loopback (async mode, SGD tables; 1, then 2
// servers) and one client. For each operation the raw baseline is
// PsClient::Echo over the same channels, each server's echo carrying its
// share of the request and reply bytes (fanned out in parallel), so
// the ratio is what tables, slicing and (de)serialisation add on top of
// the transport. Then the table phase (bench_ps_table.h): sparse-table
// operations per second per core next to std::unordered_map.
//
//   bench_ps [--iters N] [--only PHASES] [--servers N] [--pull_split_keys N] [--pull_calls N]
//                             PHASES: sparse, dense, table or a comma list
//                             (sparse,table: the lines in one run)
//                             prints one JSON object per line: a measurement,
//                             then its comparison in DESIGN.md's shape
//                             {"overhead":"ps/echo","value":…,"goal":"<= 1.3","met":…}
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "flotilla/common/enforce.h"
#include "flotilla/common/logging.h"
#include "flotilla/ps/client.h"
#include "flotilla/ps/server.h"
#include "bench_ps_table.h"

using namespace flotilla;
using namespace flotilla::ps;

namespace {

constexpr int64_t kKeys = 10000, kDim = 16, kDense = 1 << 20;

double Ms(const std::function<void()>& fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median wall times (ms) of the PS operation and its echo baseline, run
// alternately so both see the same machine load; two warm-up rounds first.
std::pair<double, double> Compare(int iters, const std::function<void()>& ps,
                                  const std::function<void()>& echo) {
  std::vector<double> a, b;
  for (int i = 0; i < iters + 2; ++i) {
    double x = Ms(ps), y = Ms(echo);
    if (i < 2) continue;
    a.push_back(x);
    b.push_back(y);
  }
  return {Median(a), Median(b)};
}

void Report(const std::string& op, int servers, int64_t request_bytes, int64_t reply_bytes,
            double ps_ms, double echo_ms) {
  const double bytes = static_cast<double>(request_bytes + reply_bytes);
  nlohmann::json j = {{"bench", "ps_rpc"}, {"op", op}, {"servers", servers},
                      {"request_bytes", request_bytes}, {"reply_bytes", reply_bytes},
                      {"latency_ms", ps_ms}, {"gbps", bytes / ps_ms / 1e6},
                      {"echo_latency_ms", echo_ms}, {"echo_gbps", bytes / echo_ms / 1e6},
                      {"overhead_ratio", ps_ms / echo_ms}};
  std::printf("%s\n", j.dump().c_str());
  // The goal for the sparse path is <= 1.3 (stretch 1.1); dense calls
  // are held to the same bound.
  const double ratio = ps_ms / echo_ms;
  nlohmann::json cmp = {{"bench", "ps_rpc"}, {"op", op}, {"servers", servers},
                        {"overhead", "ps/echo"}, {"value", ratio}, {"goal", "<= 1.3"},
                        {"met", ratio <= 1.3}};
  std::printf("%s\n", cmp.dump().c_str());
  std::fflush(stdout);
}

std::unique_ptr<PsServer> StartServer(int index, int num_servers) {
  PsServerOptions o;
  o.endpoint = "127.0.0.1:0";
  o.mode = PsMode::kAsync;
  o.server_index = index;
  o.num_servers = num_servers;
  auto server = std::make_unique<PsServer>(o);
  DenseTableConfig w;
  w.name = "dense";
  w.numel = kDense;
  w.rule = MakeUpdateRule(UpdateRuleConfig::Sgd(1e-6f));
  server->AddDenseTable(w);
  SparseTableConfig emb;
  emb.name = "emb";
  emb.dim = kDim;
  emb.rule = MakeUpdateRule(UpdateRuleConfig::Sgd(1e-6f));
  emb.initializer = InitializerConfig::Uniform(-0.1f, 0.1f, 1);
  server->AddSparseTable(emb);
  server->Start();
  return server;
}

using Echo = std::function<std::function<void()>(std::string share, int64_t reply)>;

void RunSparse(PsClient& client, int iters, const Echo& echo) {
  const int n = client.num_servers();
  std::vector<int64_t> keys(kKeys);
  for (int64_t i = 0; i < kKeys; ++i) keys[i] = i * 7919 % 1000003;  // scattered ids
  Tensor grads(DType::kFloat32, {kKeys, kDim});
  std::fill_n(grads.mutable_data<float>(), grads.numel(), 0.5f);
  const int64_t key_bytes = kKeys * 8, row_bytes = kKeys * kDim * 4;
  Tensor rows;  // pulled into one tensor, as the lookup op does across steps
  auto [pull, echo_pull] = Compare(iters, [&] { client.PullSparse("emb", keys, &rows); },
                                   echo(std::string(key_bytes / n, 'k'), row_bytes / n));
  Report("sparse_pull", n, key_bytes, row_bytes, pull, echo_pull);
  auto [push, echo_push] = Compare(iters, [&] { client.PushSparse("emb", keys, grads); },
                                   echo(std::string((key_bytes + row_bytes) / n, 'p'), 0));
  Report("sparse_push", n, key_bytes + row_bytes, 0, push, echo_push);
  Report("sparse_pull_push", n, 2 * key_bytes + row_bytes, row_bytes, pull + push,
         echo_pull + echo_push);
}

void RunDense(PsClient& client, int iters, const Echo& echo) {
  const int n = client.num_servers();
  Tensor dense(DType::kFloat32, {kDense});
  std::fill_n(dense.mutable_data<float>(), kDense, 0.5f);
  auto [pull, echo_pull] = Compare(iters, [&] { client.PullDense("dense", &dense); },
                                   echo("", kDense * 4 / n));
  Report("dense_pull", n, 0, kDense * 4, pull, echo_pull);
  auto [push, echo_push] = Compare(iters, [&] { client.PushDense("dense", dense); },
                                   echo(std::string(kDense * 4 / n, 'd'), 0));
  Report("dense_push", n, kDense * 4, 0, push, echo_push);
}

struct Phases {
  bool sparse = true, dense = true, table = true;
};

// "sparse,table" → those phases; throws InvalidArgument naming a phase
// that is not sparse, dense or table.
Phases ParsePhases(const std::string& list) {
  Phases p{false, false, false};
  size_t begin = 0;
  while (begin <= list.size()) {
    const size_t end = std::min(list.find(',', begin), list.size());
    const std::string phase = list.substr(begin, end - begin);
    if (phase == "sparse") p.sparse = true;
    else if (phase == "dense") p.dense = true;
    else if (phase == "table") p.table = true;
    else FLOTILLA_THROW(InvalidArgument, "bench_ps: --only takes sparse, dense, table or a comma "
                        "list of them, got '", list, "'");
    begin = end + 1;
  }
  return p;
}

// The RPC phases (sparse, dense) against num_servers in-process servers.
void RunAll(int num_servers, int iters, const Phases& phases,
            const PsClientOptions& client_options) {
  std::vector<std::unique_ptr<PsServer>> servers;
  std::vector<std::string> endpoints;
  for (int i = 0; i < num_servers; ++i) {
    servers.push_back(StartServer(i, num_servers));
    endpoints.push_back(servers.back()->endpoint());
  }
  PsClient client(endpoints, 0, 1, client_options);
  Echo echo = [&](std::string share, int64_t reply) {
    return std::function<void()>([&client, share, reply] { client.EchoAll(share, reply); });
  };
  if (phases.sparse) RunSparse(client, iters, echo);
  if (phases.dense) RunDense(client, iters, echo);
}

int Main(int argc, char** argv) {
  int iters = 30;
  Phases phases;
  std::vector<int> server_counts{1, 2};
  PsClientOptions client_options;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    FLOTILLA_ENFORCE(i + 1 < argc, "bench_ps: flag ", flag, " needs a value");
    const std::string value = argv[i + 1];
    if (flag == "--iters") {
      iters = std::stoi(value);
    } else if (flag == "--only") {
      phases = ParsePhases(value);
    } else if (flag == "--servers") {
      server_counts = {std::stoi(value)};
    } else if (flag == "--pull_split_keys") {
      client_options.pull_split_keys = std::stoll(value);
    } else if (flag == "--pull_calls") {
      client_options.pull_calls = std::stoi(value);
    } else {
      FLOTILLA_THROW(InvalidArgument, "bench_ps: unknown flag ", flag,
                     " (expected --iters N, --only sparse|dense|table[,...], --servers N, --pull_split_keys N, --pull_calls N)");
    }
  }
  if (phases.sparse || phases.dense) {
    for (int n : server_counts) RunAll(n, iters, phases, client_options);
  }
  if (phases.table) bench::RunTableBench({});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);  // stdout carries only JSON lines
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_ps: %s\n", e.what());
    return 2;
  }
}
