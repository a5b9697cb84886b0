// bench_allreduce: allreduce bus bandwidth and latency at 2 ranks on this
// host, for Flotilla shm, Flotilla gloo, raw Gloo (AllreduceRingChunked) and
// OpenMPI (MPI_Allreduce), in one invocation, followed by ratio lines.
//
//   bench_allreduce                 # all four, 4 KB .. 64 MB
//   bench_allreduce --netns         # Flotilla gloo between two network
//                                   # namespaces over a veth shaped to 1 Gbit
//   bench_allreduce --max-bytes N   # stop at N bytes
//   bench_allreduce --passes N      # interleaved passes, best kept (default 3)
//
// Each implementation runs as separate processes (never threads); rank 0's
// JSON lines are relayed to stdout. Internal: --worker runs one Flotilla rank.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench_allreduce_timing.h"
#include "flotilla/comm/process_group.h"
#include "flotilla/comm/tcp_store.h"
#include "flotilla/common/strings.h"

namespace fs = std::filesystem;
using flotilla::comm::ProcessGroupOptions;

namespace {

struct Args {
  bool worker = false, netns = false, host_store = false;
  std::string impl = "shm", store, host_id, gloo_host;
  int rank = 0, size = 2, passes = 3;
  size_t max_bytes = size_t(64) << 20, min_bytes = 0;
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string f = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (f == "--worker") a.worker = true;
    else if (f == "--netns") a.netns = true;
    else if (f == "--host-store") a.host_store = true;
    else if (f == "--impl") a.impl = next();
    else if (f == "--store") a.store = next();
    else if (f == "--host-id") a.host_id = next();
    else if (f == "--gloo-host") a.gloo_host = next();
    else if (f == "--rank") a.rank = atoi(next().c_str());
    else if (f == "--passes") a.passes = std::max(1, atoi(next().c_str()));
    else if (f == "--size") a.size = atoi(next().c_str());
    else if (f == "--max-bytes") a.max_bytes = strtoull(next().c_str(), nullptr, 10);
    else if (f == "--min-bytes") a.min_bytes = strtoull(next().c_str(), nullptr, 10);
  }
  return a;
}

// ---- one Flotilla rank ----

int Worker(const Args& a) {
  // One core per rank, as mpirun binds by default.
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(a.rank % std::max(1u, std::thread::hardware_concurrency()), &set);
  if (!getenv("FLOTILLA_BENCH_NO_PIN")) sched_setaffinity(0, sizeof(set), &set);
  std::unique_ptr<flotilla::comm::TCPStoreServer> server;
  auto hp = flotilla::ParseHostPort(a.store, "--store");
  if (a.host_store && a.rank == 0) server = flotilla::comm::TCPStoreServer::Start(hp.host, hp.port);
  auto store = flotilla::comm::ConnectStore(a.store);
  ProcessGroupOptions o;
  o.backend = a.impl;
  o.timeout = std::chrono::seconds(120);
  o.name = "bench_" + a.impl;
  if (!a.host_id.empty()) o.host_id = a.host_id;
  o.gloo_hostname = a.gloo_host;
  auto pg = flotilla::comm::NewProcessGroup(store, a.rank, a.size, o);
  for (size_t bytes : flotilla::bench::AllreduceSizes()) {
    if (bytes > a.max_bytes || bytes < a.min_bytes) continue;
    const size_t count = bytes / sizeof(float);
    std::vector<float> data(count, 1.0f);
    pg->allreduce(data.data(), count, flotilla::DType::kFloat32, flotilla::comm::ReduceOp::kSum);
    if (data[0] != float(a.size)) {
      std::cerr << "bench_allreduce: wrong result " << data[0] << "\n";
      return 1;
    }
    double sec = flotilla::bench::MedianSecondsPerOp(
        bytes,
        [&] {
          pg->allreduce(data.data(), count, flotilla::DType::kFloat32,
                        flotilla::comm::ReduceOp::kSum);
        },
        [&] { pg->barrier(); });
    std::string impl = a.netns ? "gloo_netns_1gbit" : a.impl;
    if (a.rank == 0) std::cout << flotilla::bench::AllreduceJson(impl, bytes, a.size, sec) << std::endl;
  }
  pg->barrier();
  return 0;
}

// ---- process plumbing ----

struct Child {
  pid_t pid = -1;
  int out = -1;  // read end of its stdout, or -1
};

Child Spawn(const std::vector<std::string>& argv, bool capture) {
  int fds[2] = {-1, -1};
  if (capture && pipe(fds) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    if (capture) dup2(fds[1], 1);
    else dup2(open("/dev/null", O_WRONLY), 1);
    if (capture) close(fds[0]);
    std::vector<char*> args;
    for (const auto& s : argv) args.push_back(const_cast<char*>(s.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  if (capture) close(fds[1]);
  return {pid, capture ? fds[0] : -1};
}

std::string ReadAll(int fd) {
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) s.append(buf, n);
  close(fd);
  return s;
}

// Waits for every child; any still running after `limit` is killed by pid.
bool WaitAll(const std::vector<Child>& kids, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  bool ok = true;
  for (const auto& k : kids) {
    int status = 0;
    while (waitpid(k.pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(k.pid, SIGKILL);
        waitpid(k.pid, &status, 0);
        ok = false;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  return ok;
}

// Runs the processes and returns the first one's JSON lines by size
// (echoing them when asked). Failures are reported as a JSON note.
struct Result {
  double busbw = 0, latency_us = 0;
  nlohmann::json line;
};
using Results = std::map<size_t, Result>;

Results RunImpl(const std::string& impl, const std::vector<std::vector<std::string>>& procs,
                bool echo) {
  std::vector<Child> kids;
  for (size_t i = 0; i < procs.size(); ++i) kids.push_back(Spawn(procs[i], i == 0));
  std::string out = kids[0].out >= 0 ? ReadAll(kids[0].out) : "";
  bool ok = WaitAll(kids, std::chrono::seconds(600));
  Results results;
  for (const auto& line : flotilla::Split(out, '\n')) {
    if (echo) std::cout << line << std::endl;
    try {
      auto j = nlohmann::json::parse(line);
      results[j["bytes"].get<size_t>()] = {j["busbw_gbps"].get<double>(),
                                           j["latency_us"].get<double>(), j};
    } catch (const std::exception&) {
    }
  }
  if (!ok) {
    std::cout << nlohmann::json{{"bench", "allreduce"}, {"impl", impl}, {"error", "a rank failed"}}
                     .dump()
              << std::endl;
  }
  return results;
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
                                                    const std::string& store) {
  std::vector<std::vector<std::string>> procs;
  for (int r = 0; r < 2; ++r) {
    procs.push_back({SelfPath(), "--worker", "--impl", impl, "--rank", std::to_string(r), "--size",
                     "2", "--store", store, "--max-bytes", std::to_string(a.max_bytes)});
  }
  return procs;
}

void PrintRatios(const std::map<std::string, Results>& all) {
  auto get = [&](const std::string& impl, size_t bytes) -> const Result* {
    auto it = all.find(impl);
    if (it == all.end() || !it->second.count(bytes)) return nullptr;
    return &it->second.at(bytes);
  };
  for (const auto& [bytes, shm] : all.at("shm")) {
    nlohmann::json j{{"bench", "allreduce_ratio"}, {"bytes", bytes}, {"ranks", 2}};
    auto ratio = [&](const char* name, const std::string& other) {
      if (const Result* o = get(other, bytes)) {
        j[std::string("shm_vs_") + name + "_busbw"] = std::round(shm.busbw / o->busbw * 100) / 100;
        j[std::string("shm_vs_") + name + "_latency"] =
            std::round(shm.latency_us / o->latency_us * 100) / 100;
      }
    };
    ratio("gloo_raw", "gloo_raw");
    ratio("mpi", "mpi");
    ratio("flotilla_gloo", "gloo");
    std::cout << j.dump() << std::endl;
  }
}

// One pass over every implementation, back to back.
void RunPass(const Args& a, std::map<std::string, std::vector<Results>>& runs) {
  {
    auto server = flotilla::comm::TCPStoreServer::Start("127.0.0.1", 0);
    runs["shm"].push_back(RunImpl("shm", FlotillaRanks(a, "shm", server->address()), false));
    runs["gloo"].push_back(RunImpl("gloo", FlotillaRanks(a, "gloo", server->address()), false));
  }
  std::string bin = fs::path(SelfPath()).parent_path().string();
  std::string dir = fs::temp_directory_path() / ("flotilla_gloo_raw_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<std::vector<std::string>> raw;
  for (int r = 0; r < 2; ++r) {
    raw.push_back({bin + "/gloo_allreduce", std::to_string(r), "2", dir, std::to_string(a.max_bytes)});
  }
  runs["gloo_raw"].push_back(RunImpl("gloo_raw", raw, false));
  fs::remove_all(dir);
  if (OnPath("mpirun")) {
    runs["mpi"].push_back(RunImpl("mpi", {{"mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
                                           "2", bin + "/mpi_allreduce", std::to_string(a.max_bytes)}},
                                  false));
  }
}

// The machine is shared: each implementation runs in several passes
// interleaved with the others, and its best pass per size is reported, so
// that a burst of someone else's load does not decide a comparison.
int Driver(const Args& a) {
  std::map<std::string, std::vector<Results>> runs;
  for (int pass = 0; pass < a.passes; ++pass) RunPass(a, runs);
  if (!runs.count("mpi")) {
    std::cout << R"({"bench":"allreduce","impl":"mpi","skipped":"mpirun not found on PATH"})"
              << std::endl;
  }
  std::map<std::string, Results> best;
  for (const auto& impl : {"shm", "gloo", "gloo_raw", "mpi"}) {
    if (!runs.count(impl)) continue;
    for (const auto& pass : runs[impl]) {
      for (const auto& [bytes, r] : pass) {
        if (!best[impl].count(bytes) || r.busbw > best[impl][bytes].busbw) best[impl][bytes] = r;
      }
    }
    for (auto& [bytes, r] : best[impl]) {
      r.line["passes"] = a.passes;
      std::cout << r.line.dump() << std::endl;
    }
  }
  PrintRatios(best);
  return 0;
}

// ---- --netns: two namespace hosts joined by a veth shaped to 1 Gbit ----

int Sh(const std::string& cmd) { return system((cmd + " >/dev/null 2>&1").c_str()); }

// Creates the namespaces and the link; removes them on destruction.
struct NetnsPair {
  std::string a, b;
  bool ok = false;
  NetnsPair() {
    std::string tag = std::to_string(getpid());
    a = "flb_a" + tag;
    b = "flb_b" + tag;
    ok = Sh("ip netns add " + a) == 0 && Sh("ip netns add " + b) == 0 &&
         Sh("ip link add fla" + tag + " netns " + a + " type veth peer name flb" + tag + " netns " +
            b) == 0;
    const std::string shape = " root tbf rate 1gbit burst 1mb latency 100ms";
    ok = ok && Sh("ip -n " + a + " addr add 10.231.0.1/24 dev fla" + tag) == 0 &&
         Sh("ip -n " + b + " addr add 10.231.0.2/24 dev flb" + tag) == 0 &&
         Sh("ip -n " + a + " link set fla" + tag + " up") == 0 &&
         Sh("ip -n " + b + " link set flb" + tag + " up") == 0 &&
         Sh("ip -n " + a + " link set lo up") == 0 && Sh("ip -n " + b + " link set lo up") == 0 &&
         Sh("ip netns exec " + a + " tc qdisc add dev fla" + tag + shape) == 0 &&
         Sh("ip netns exec " + b + " tc qdisc add dev flb" + tag + shape) == 0;
  }
  ~NetnsPair() {
    Sh("ip netns del " + a);
    Sh("ip netns del " + b);
  }
};

int Netns(const Args& a) {
  if (geteuid() != 0) {
    std::cout << R"({"bench":"allreduce","impl":"gloo_netns_1gbit","skipped":"needs root for ip netns"})"
              << std::endl;
    return 0;
  }
  NetnsPair net;
  if (!net.ok) {
    std::cout << R"({"bench":"allreduce","impl":"gloo_netns_1gbit","skipped":"cannot create namespaces/veth/tbf"})"
              << std::endl;
    return 0;
  }
  const std::string store = "10.231.0.1:29517";
  std::vector<std::vector<std::string>> procs;
  for (int r = 0; r < 2; ++r) {
    std::string ip = r == 0 ? "10.231.0.1" : "10.231.0.2";
    procs.push_back({"ip", "netns", "exec", r == 0 ? net.a : net.b, SelfPath(), "--worker",
                     "--netns", "--host-store", "--impl", "gloo", "--rank", std::to_string(r),
                     "--size", "2", "--store", store, "--host-id", ip, "--gloo-host", ip,
                     "--min-bytes", std::to_string(size_t(1) << 20), "--max-bytes",
                     std::to_string(a.max_bytes)});
  }
  Results r = RunImpl("gloo_netns_1gbit", procs, true);
  for (const auto& [bytes, res] : r) {
    const double link_gbps = 0.125;  // 1 Gbit/s in GB/s
    std::cout << nlohmann::json{{"bench", "allreduce_ratio"}, {"impl", "gloo_netns_1gbit"},
                                {"bytes", bytes}, {"busbw_vs_link", std::round(res.busbw / link_gbps * 1000) / 1000}}
                     .dump()
              << std::endl;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = Parse(argc, argv);
  try {
    if (a.worker) return Worker(a);
    if (a.netns) return Netns(a);
    return Driver(a);
  } catch (const std::exception& e) {
    std::cerr << "bench_allreduce: " << e.what() << std::endl;
    return 1;
  }
}
