// bench_allreduce: same-host collectives at 2 ranks, Flotilla shm against
// OpenMPI (mpirun) and raw Gloo, side by side in one invocation, against the
// memory bound of this machine.
//
//   bench_allreduce                  # everything, 4 KB .. 64 MB
//   bench_allreduce --ops allreduce  # some collectives only (comma list of
//                                    # allreduce, broadcast, allgather,
//                                    # reduce_scatter, reduce)
//   bench_allreduce --impls shm,mpi  # some implementations only (shm, gloo =
//                                    # Flotilla gloo, gloo_raw, mpi)
//   bench_allreduce --passes N       # interleaved passes, medians (default 3)
//   bench_allreduce --phases         # also where shm's time goes, per size
//   bench_allreduce --netns          # Flotilla gloo between two network
//                                    # namespaces over a veth shaped to 1 Gbit
//   bench_allreduce --min-bytes N --max-bytes N
//
// Output, JSON lines: the machine (load, caches, kernel ISA); per size its copy
// bandwidth (one core, and each core with both busy); per implementation,
// collective and size the median over passes of busbw and latency; per shm
// collective and size the memory bound and the fraction of it reached (see
// collective_bounds.h); then comparison lines in DESIGN.md's shape.
//
// Each implementation runs as separate processes (never threads); rank 0's
// lines are relayed. Internal: --worker runs one Flotilla rank,
// --copy-worker one process of the copy bandwidth measurement.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "allreduce_worker.h"
#include "bench_allreduce_timing.h"
#include "collective_bounds.h"
#include "comm/reduce_kernels.h"
#include "comm/shm/shm_plan.h"
#include "copy_bandwidth.h"
#include "flotilla/comm/tcp_store.h"
#include "flotilla/common/strings.h"
#include "flotilla/testing/process.h"
#include "netns_pair.h"

namespace fs = std::filesystem;
using flotilla::bench::NetnsPair;
using flotilla::bench::WorkerArgs;
using nlohmann::json;

namespace {

struct Args {
  bool worker = false, copy_worker = false, netns = false, phases = false;
  int passes = 3;
  std::vector<std::string> impls{"shm", "gloo", "gloo_raw", "mpi"};
  WorkerArgs w;
  flotilla::bench::CopyWorkerArgs copy;
};

Args Parse(int argc, char** argv) {
  Args a;
  a.w.ops = flotilla::bench::Collectives();
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (f == "--worker") a.worker = true;
    else if (f == "--copy-worker") a.copy_worker = true;
    else if (f == "--copy-bytes") a.copy.bytes = strtoull(next().c_str(), nullptr, 10);
    else if (f == "--copy-core") a.copy.core = atoi(next().c_str());
    else if (f == "--go-fd") a.copy.go_fd = atoi(next().c_str());
    else if (f == "--ready-fd") a.copy.ready_fd = atoi(next().c_str());
    else if (f == "--netns") a.netns = true;
    else if (f == "--phases") a.phases = a.w.phases = true;
    else if (f == "--host-store") a.w.host_store = true;
    else if (f == "--impl") a.w.impl = next();
    else if (f == "--label") a.w.label = next();
    else if (f == "--impls") a.impls = flotilla::Split(next(), ',');
    else if (f == "--ops") a.w.ops = flotilla::Split(next(), ',');
    else if (f == "--store") a.w.store = next();
    else if (f == "--host-id") a.w.host_id = next();
    else if (f == "--gloo-host") a.w.gloo_host = next();
    else if (f == "--rank") a.w.rank = atoi(next().c_str());
    else if (f == "--passes") a.passes = std::max(1, atoi(next().c_str()));
    else if (f == "--size") a.w.size = atoi(next().c_str());
    else if (f == "--max-bytes") a.w.max_bytes = strtoull(next().c_str(), nullptr, 10);
    else if (f == "--min-bytes") a.w.min_bytes = strtoull(next().c_str(), nullptr, 10);
  }
  return a;
}

// ---- process plumbing ----

// Waits for every process; any still running after `limit` fails the run
// (it is killed when its Process goes).
bool WaitAll(std::vector<flotilla::testing::Process>& kids, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  bool ok = true;
  for (auto& k : kids) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    ok &= k.Wait(std::max(left, std::chrono::milliseconds(0))) == 0;
  }
  return ok;
}

// A measurement: one JSON line of a rank 0.
struct Result {
  double busbw = 0, latency_us = 0;
  json line;
};
// impl -> op -> bytes -> one Result per pass
using Runs = std::map<std::string, std::map<std::string, std::map<size_t, std::vector<Result>>>>;

// Runs the processes; files rank 0's measurement lines into `runs` (and
// echoes other lines, e.g. phases). A failure is reported as a JSON note.
void RunImpl(const std::string& impl, const std::vector<std::vector<std::string>>& procs,
             Runs& runs) {
  std::vector<flotilla::testing::Process> kids;
  try {
    for (size_t i = 0; i < procs.size(); ++i) {
      flotilla::testing::ProcessOptions o{procs[i]};
      o.stdout_to = i == 0 ? flotilla::testing::Output::kCapture : flotilla::testing::Output::kDiscard;
      kids.emplace_back(std::move(o));
    }
  } catch (const flotilla::Error& e) {
    std::cout << json{{"bench", "allreduce"}, {"impl", impl}, {"error", e.what()}}.dump() << std::endl;
    return;
  }
  bool ok = WaitAll(kids, std::chrono::seconds(900));
  const std::string out = kids[0].Stdout();
  for (const auto& line : flotilla::Split(out, '\n')) {
    try {
      auto j = json::parse(line);
      if (!j.contains("busbw_gbps")) {
        std::cout << line << std::endl;
        continue;
      }
      runs[impl][j["bench"]][j["bytes"].get<size_t>()].push_back(
          {j["busbw_gbps"].get<double>(), j["latency_us"].get<double>(), j});
    } catch (const std::exception&) {
    }
  }
  if (!ok) std::cout << json{{"bench", "allreduce"}, {"impl", impl}, {"error", "a rank failed"}}.dump() << std::endl;
}

std::string SelfPath() { return fs::read_symlink("/proc/self/exe").string(); }

bool OnPath(const std::string& exe) {
  const char* path = getenv("PATH");
  for (const auto& dir : flotilla::Split(path ? path : "", ':')) {
    if (access((dir + "/" + exe).c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::vector<std::vector<std::string>> FlotillaRanks(const Args& a, const std::string& impl,
                                                    const std::string& store,
                                                    const std::vector<std::string>& ops,
                                                    bool phases) {
  std::vector<std::vector<std::string>> procs;
  for (int r = 0; r < 2; ++r) {
    procs.push_back({SelfPath(), "--worker", "--impl", impl, "--rank", std::to_string(r), "--size",
                     "2", "--store", store, "--ops", flotilla::Join(ops, ","), "--min-bytes",
                     std::to_string(a.w.min_bytes), "--max-bytes", std::to_string(a.w.max_bytes)});
    if (phases) procs.back().push_back("--phases");
  }
  return procs;
}

bool Wants(const Args& a, const std::string& impl) {
  return std::find(a.impls.begin(), a.impls.end(), impl) != a.impls.end();
}

bool HasOp(const Args& a, const std::string& op) {
  return std::find(a.w.ops.begin(), a.w.ops.end(), op) != a.w.ops.end();
}

// One pass over every implementation, back to back. Alternating the order
// between passes keeps a slow phase of the machine from always hitting the
// same peer.
void RunPass(const Args& a, int pass, Runs& runs) {
  std::string bin = fs::path(SelfPath()).parent_path().string();
  std::vector<std::function<void()>> steps;
  steps.push_back([&] {
    if (!Wants(a, "shm")) return;
    auto server = flotilla::comm::TCPStoreServer::Start("127.0.0.1", 0);
    RunImpl("shm", FlotillaRanks(a, "shm", server->address(), a.w.ops, false), runs);
  });
  steps.push_back([&] {
    if (!Wants(a, "mpi") || !OnPath("mpirun")) return;
    RunImpl("mpi", {{"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
                     bin + "/mpi_allreduce", std::to_string(a.w.max_bytes),
                     flotilla::Join(a.w.ops, ","), std::to_string(a.w.min_bytes)}},
            runs);
  });
  steps.push_back([&] {
    if (!Wants(a, "gloo_raw") || !HasOp(a, "allreduce")) return;
    std::string dir = fs::temp_directory_path() / ("flotilla_gloo_raw_" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::vector<std::vector<std::string>> raw;
    for (int r = 0; r < 2; ++r) {
      raw.push_back({bin + "/gloo_allreduce", std::to_string(r), "2", dir,
                     std::to_string(a.w.max_bytes)});
    }
    RunImpl("gloo_raw", raw, runs);
    fs::remove_all(dir);
  });
  steps.push_back([&] {
    if (!Wants(a, "gloo") || !HasOp(a, "allreduce")) return;
    auto server = flotilla::comm::TCPStoreServer::Start("127.0.0.1", 0);
    RunImpl("gloo", FlotillaRanks(a, "gloo", server->address(), {"allreduce"}, false), runs);
  });
  if (pass % 2) std::reverse(steps.begin(), steps.end());
  for (auto& s : steps) s();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double Round(double v, double to = 100) { return std::round(v * to) / to; }

double Load1() {
  std::ifstream in("/proc/loadavg");
  double l = 0;
  in >> l;
  return l;
}

void PrintMachine() {
  auto c = flotilla::comm::shm::CacheSizes::Detect();
  std::cout << json{{"bench", "allreduce_machine"},
                    {"cpus", std::thread::hardware_concurrency()},
                    {"load1", Load1()},
                    {"kernel_isa", flotilla::comm::IsaName(flotilla::comm::ActiveIsa())},
                    {"l1d_bytes", c.l1d},
                    {"l2_bytes", c.l2},
                    {"l3_bytes", c.l3},
                    {"shm_max_chunk_bytes", flotilla::comm::shm::MaxChunk(c, 2)}}
                   .dump()
            << std::endl;
}

// ---- report ----

using Medians = std::map<std::string, std::map<std::string, std::map<size_t, Result>>>;

Medians PrintMedians(const Runs& runs) {
  Medians med;
  for (const auto& [impl, ops] : runs) {
    for (const auto& [op, sizes] : ops) {
      for (const auto& [bytes, passes] : sizes) {
        std::vector<double> bw, lat;
        for (const auto& r : passes) bw.push_back(r.busbw), lat.push_back(r.latency_us);
        Result m{Median(bw), Median(lat), passes[0].line};
        m.line["busbw_gbps"] = Round(m.busbw, 1000);
        m.line["latency_us"] = Round(m.latency_us);
        m.line.erase("algbw_gbps");
        m.line["passes"] = passes.size();
        std::cout << m.line.dump() << std::endl;
        med[impl][op][bytes] = m;
      }
    }
  }
  return med;
}

void Compare(const std::string& op, size_t bytes, const std::string& ratio, double value,
             const std::string& goal, bool met) {
  std::cout << json{{"bench", op}, {"bytes", bytes},      {"ratio", ratio},
                    {"value", Round(value)}, {"goal", goal}, {"met", met}}
                   .dump()
            << std::endl;
}

// Per shm collective and size: the memory bound (collective_bounds.h) and
// the fraction of it reached.
void PrintBounds(const Medians& med, const std::map<size_t, flotilla::bench::CopyRate>& copy) {
  if (!med.count("shm")) return;
  for (const auto& [op, sizes] : med.at("shm")) {
    for (const auto& [bytes, r] : sizes) {
      if (!copy.count(bytes)) continue;
      const auto& c = copy.at(bytes);
      const double bound = flotilla::bench::MemoryBoundBusbw(op, 2, c.per_core_gbps);
      std::cout << json{{"bench", op + "_bound"},
                        {"impl", "shm"},
                        {"bytes", bytes},
                        {"copy_one_core_gbps", Round(c.one_core_gbps)},
                        {"copy_per_core_both_busy_gbps", Round(c.per_core_gbps)},
                        {"bytes_moved_per_byte", Round(flotilla::bench::ShmBytesMoved(op, 2))},
                        {"bound_busbw_gbps", Round(bound)},
                        {"busbw_gbps", Round(r.busbw, 1000)},
                        {"fraction_of_bound", Round(r.busbw / bound)}}
                       .dump()
                << std::endl;
      if (op == "allreduce" && bytes >= (size_t(1) << 20)) {
        Compare(op, bytes, "shm/memory_bound", r.busbw / bound, ">= 0.7", r.busbw / bound >= 0.7);
      }
    }
  }
}

void PrintComparisons(const Medians& med) {
  auto get = [&](const std::string& impl, const std::string& op, size_t bytes) -> const Result* {
    auto i = med.find(impl);
    if (i == med.end() || !i->second.count(op) || !i->second.at(op).count(bytes)) return nullptr;
    return &i->second.at(op).at(bytes);
  };
  if (!med.count("shm")) return;
  const size_t kKB = 1024, kMB = kKB * kKB;
  for (const auto& [op, sizes] : med.at("shm")) {
    for (const auto& [bytes, shm] : sizes) {
      const Result* mpi = get("mpi", op, bytes);
      const Result* raw = get("gloo_raw", op, bytes);
      const bool mid = bytes >= 256 * kKB && bytes <= 64 * kMB;
      const std::string mpi_goal = op == "allreduce" ? ">= 1.3" : ">= 1.0";
      if (mpi && mid) {
        double v = shm.busbw / mpi->busbw;
        Compare(op, bytes, "shm/openmpi", v, mpi_goal, v >= (op == "allreduce" ? 1.3 : 1.0));
      }
      if (raw && op == "allreduce" && bytes >= 4 * kMB) {
        double v = shm.busbw / raw->busbw;
        Compare(op, bytes, "shm/raw_gloo", v, ">= 2.5", v >= 2.5);
      }
      if (mpi && op == "allreduce" && bytes == 4 * kKB) {
        double v = shm.latency_us / mpi->latency_us;
        std::cout << json{{"bench", op}, {"bytes", bytes},         {"overhead", "shm/openmpi latency"},
                          {"value", Round(v)}, {"goal", "<= 1.5"}, {"met", v <= 1.5}}
                         .dump()
                  << std::endl;
      }
    }
  }
}

int Driver(const Args& a) {
  PrintMachine();
  Runs runs;
  std::map<size_t, std::vector<flotilla::bench::CopyRate>> copies;
  for (int pass = 0; pass < a.passes; ++pass) {
    RunPass(a, pass, runs);
    for (size_t bytes : flotilla::bench::AllreduceSizes()) {
      if (bytes < a.w.min_bytes || bytes > a.w.max_bytes) continue;
      copies[bytes].push_back(flotilla::bench::MeasureCopy(SelfPath(), bytes, 2));
    }
  }
  if (Wants(a, "mpi") && !OnPath("mpirun")) {
    std::cout << R"({"bench":"allreduce","impl":"mpi","skipped":"mpirun not found on PATH"})"
              << std::endl;
  }
  std::map<size_t, flotilla::bench::CopyRate> copy;
  for (auto& [bytes, v] : copies) {
    std::vector<double> one, both;
    for (auto& c : v) one.push_back(c.one_core_gbps), both.push_back(c.per_core_gbps);
    copy[bytes] = {Median(one), Median(both)};
  }
  Medians med = PrintMedians(runs);
  PrintBounds(med, copy);
  PrintComparisons(med);
  if (a.phases) {
    auto server = flotilla::comm::TCPStoreServer::Start("127.0.0.1", 0);
    Runs ignored;
    RunImpl("shm_phases", FlotillaRanks(a, "shm", server->address(), a.w.ops, true), ignored);
  }
  std::cout << json{{"bench", "allreduce_machine"}, {"load1_at_end", Load1()}}.dump() << std::endl;
  return 0;
}

// ---- --netns: two namespace hosts joined by a veth shaped to 1 Gbit ----

int Netns(const Args& a) {
  if (geteuid() != 0) {
    std::cout << R"({"bench":"allreduce","impl":"gloo_netns_1gbit","skipped":"needs root for ip netns"})"
              << std::endl;
    return 0;
  }
  NetnsPair net("flb", 0);
  if (!net.ok) {
    std::cout << R"({"bench":"allreduce","impl":"gloo_netns_1gbit","skipped":"cannot create namespaces/veth/tbf"})"
              << std::endl;
    return 0;
  }
  const std::string store = net.ip_a + ":29517";
  std::vector<std::vector<std::string>> procs;
  for (int r = 0; r < 2; ++r) {
    std::string ip = r == 0 ? net.ip_a : net.ip_b;
    procs.push_back({"ip", "netns", "exec", r == 0 ? net.a : net.b, SelfPath(), "--worker",
                     "--label", "gloo_netns_1gbit", "--ops", "allreduce", "--host-store",
                     "--impl", "gloo", "--rank", std::to_string(r), "--size", "2", "--store",
                     store, "--host-id", ip, "--gloo-host", ip, "--min-bytes",
                     std::to_string(size_t(1) << 20), "--max-bytes",
                     std::to_string(a.w.max_bytes)});
  }
  Runs runs;
  RunImpl("gloo_netns_1gbit", procs, runs);
  for (const auto& [bytes, res] : runs["gloo_netns_1gbit"]["allreduce"]) {
    std::cout << res[0].line.dump() << std::endl;
    const double link_gbps = 0.125;  // 1 Gbit/s in GB/s
    double v = res[0].busbw / link_gbps;
    Compare("allreduce", bytes, "gloo_netns/link", v, ">= 0.9", v >= 0.9);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = Parse(argc, argv);
  try {
    if (a.worker) return flotilla::bench::RunWorker(a.w);
    if (a.copy_worker) return flotilla::bench::RunCopyWorker(a.copy);
    if (a.netns) return Netns(a);
    return Driver(a);
  } catch (const std::exception& e) {
    std::cerr << "bench_allreduce: " << e.what() << std::endl;
    return 1;
  }
}
