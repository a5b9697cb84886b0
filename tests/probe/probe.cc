// launch_probe: a stand-in training program for the launcher's tests and
// benchmarks. It records the environment the launcher gave it and then does
// what it is told, optionally only on one process ("@TAG"; the tag is the
// rank "2" in collective jobs, "w1"/"s0" for workers/servers in ps jobs):
//
//   --out DIR            write DIR/env.TAG.json ({"pid","tag","env","bind"}) and DIR/pid.TAG
//   --ignore_term[@TAG]  ignore SIGTERM (only SIGKILL ends it)
//   --bind               bind and listen on PADDLE_CURRENT_ENDPOINT (SO_REUSEADDR)
//   --bind_plain         the same without SO_REUSEADDR
//   --store_barrier      meet every process in the PADDLE_MASTER store (after writing
//                        the files above); DIR/barrier.TAG says "ok" or the error
//   --grandchild         fork a child that sleeps 60 s in the probe's process group
//                        (its pid in DIR/pid.TAG.g): does the launcher reach it?
//   --print N            print N numbered lines
//   --delay S            sleep S seconds before the actions below
//   --exit CODE[@TAG]    exit with CODE
//   --signal NAME[@TAG]  raise signal NAME (KILL, SEGV, TERM, ...)
//   --sleep S[@TAG]      then sleep S seconds and exit 0
//   --shm_setup go[@TAG] join a shared-memory group of every trainer through the
//                        PADDLE_MASTER store (blocks until all have mapped it)
//   --shm_created go[@TAG]  wait until rank 0 has created that group's segment
//                        and write its name to DIR/shm_name
// Before an --exit/--signal it writes DIR/death.TAG with the wall-clock time
// in nanoseconds, so benchmarks can time the launcher's reaction.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "flotilla/common/job_secret.h"

#include <nlohmann/json.hpp>

#include "comm/shm/shm_backend.h"
#include "flotilla/comm/prefix_store.h"
#include "flotilla/comm/tcp_store.h"

// The job's store demands the job secret the launcher handed down.
flotilla::comm::TCPStoreOptions ProbeStoreOptions() {
  flotilla::comm::TCPStoreOptions o;
  o.token = flotilla::RequireJobSecret("launch_probe");
  o.tls = flotilla::TlsFilesFromEnv();
  return o;
}

extern char** environ;

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string Tag() {
  const std::string role = Env("TRAINING_ROLE");
  if (role == "PSERVER") return "s" + Env("PADDLE_PSERVER_ID");
  if (role == "TRAINER") return "w" + Env("PADDLE_TRAINER_ID");
  // Under mpirun (the benchmark's peer) the rank comes from Open MPI.
  if (Env("PADDLE_TRAINER_ID").empty()) return Env("OMPI_COMM_WORLD_RANK");
  return Env("PADDLE_TRAINER_ID");
}

// "VALUE" applies to everyone, "VALUE@TAG" only to TAG.
std::optional<std::string> ForMe(const std::string& arg, const std::string& tag) {
  auto at = arg.find('@');
  if (at == std::string::npos) return arg;
  if (arg.substr(at + 1) == tag) return arg.substr(0, at);
  return std::nullopt;
}

int SignalNumber(const std::string& name) {
  static const std::map<std::string, int> known = {
      {"KILL", SIGKILL}, {"SEGV", SIGSEGV}, {"TERM", SIGTERM}, {"ABRT", SIGABRT},
      {"INT", SIGINT},   {"BUS", SIGBUS},   {"HUP", SIGHUP}};
  auto it = known.find(name);
  return it != known.end() ? it->second : std::atoi(name.c_str());
}

void Sleep(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

std::string BindEndpoint(bool reuse_addr) {
  std::string ep = Env("PADDLE_CURRENT_ENDPOINT");
  auto colon = ep.rfind(':');
  if (colon == std::string::npos) return "no PADDLE_CURRENT_ENDPOINT";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::atoi(ep.c_str() + colon + 1)));
  inet_pton(AF_INET, ep.substr(0, colon).c_str(), &addr.sin_addr);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  if (reuse_addr) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return std::string("bind: ") + std::strerror(errno);
  }
  if (listen(fd, 16) != 0) return std::string("listen: ") + std::strerror(errno);
  return "ok";  // the socket stays open until exit
}

std::string StoreBarrier(const std::string& tag) {
  try {
    auto store = flotilla::comm::ConnectStore(Env("PADDLE_MASTER"), ProbeStoreOptions());
    store->setString("probe/" + tag, tag);
    // Everyone: the trainers ("0".."n-1", or "w0".. in ps mode) and the servers.
    const bool ps = !Env("TRAINING_ROLE").empty();
    std::vector<std::string> keys;
    int n = std::atoi(Env("PADDLE_TRAINERS_NUM").c_str());
    for (int i = 0; i < n; ++i) keys.push_back("probe/" + std::string(ps ? "w" : "") + std::to_string(i));
    int servers = ps ? std::atoi(Env("PADDLE_PSERVERS_NUM").c_str()) : 0;
    for (int i = 0; i < servers; ++i) keys.push_back("probe/s" + std::to_string(i));
    store->wait(keys, std::chrono::seconds(60));
    return "ok";
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::shared_ptr<flotilla::comm::Store> ShmStore() {
  return std::make_shared<flotilla::comm::PrefixStore>("probe_shm",
                                                       flotilla::comm::ConnectStore(Env("PADDLE_MASTER"), ProbeStoreOptions()));
}

void ShmSetup() {
  auto store = ShmStore();
  flotilla::comm::shm::ShmBackend shm(*store, std::atoi(Env("PADDLE_TRAINER_ID").c_str()),
                                      std::atoi(Env("PADDLE_TRAINERS_NUM").c_str()), {});
}

// The segment's name, as rank 0 publishes it for the others.
std::string ShmCreated() {
  auto store = ShmStore();
  store->wait({"shm/name"}, std::chrono::seconds(60));
  return store->getString("shm/name");
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path + ".tmp") << text;
  std::rename((path + ".tmp").c_str(), path.c_str());
}

std::string NowNs() {
  return std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string tag = Tag();
  std::map<std::string, std::string> single;
  std::vector<std::pair<std::string, std::string>> actions;
  bool bind = false, bind_plain = false, barrier = false, grandchild = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--bind") { bind = true; continue; }
    if (a == "--bind_plain") { bind = bind_plain = true; continue; }
    if (a == "--store_barrier") { barrier = true; continue; }
    if (a == "--grandchild") { grandchild = true; continue; }
    if (a.rfind("--ignore_term", 0) == 0) {
      if (ForMe(a.size() > 13 ? "x" + a.substr(13) : "x", tag)) signal(SIGTERM, SIG_IGN);
      continue;
    }
    if (i + 1 >= argc) { std::cerr << "probe: " << a << " needs a value\n"; return 64; }
    actions.emplace_back(a, argv[++i]);
  }
  nlohmann::json record = {{"pid", getpid()}, {"tag", tag}};
  for (char** e = environ; *e; ++e) {
    std::string s = *e;
    auto eq = s.find('=');
    record["env"][s.substr(0, eq)] = s.substr(eq + 1);
  }
  if (bind) record["bind"] = BindEndpoint(!bind_plain);
  std::string out;
  for (auto& [k, v] : actions) {
    if (k == "--out") out = v;
  }
  if (grandchild) {
    pid_t g = fork();
    if (g == 0) {
      Sleep(60);
      _exit(0);
    }
    if (!out.empty()) WriteFile(out + "/pid." + tag + ".g", std::to_string(g));
  }
  if (!out.empty()) {
    WriteFile(out + "/env." + tag + ".json", record.dump());
    WriteFile(out + "/pid." + tag, std::to_string(getpid()));
  }
  std::cout << "probe " << tag << " pid " << getpid() << " started" << std::endl;
  // After the files: once anyone passes the barrier, every record exists.
  if (barrier) {
    std::string result = StoreBarrier(tag);
    if (!out.empty()) WriteFile(out + "/barrier." + tag, result);
  }
  for (auto& [k, v] : actions) {
    if (k == "--print") {
      for (int n = 0; n < std::atoi(v.c_str()); ++n) std::cout << "line " << n << " of " << tag << "\n";
      std::cout << std::flush;
    } else if (k == "--delay") {
      Sleep(std::atof(v.c_str()));
    } else if (k == "--exit" || k == "--signal") {
      auto mine = ForMe(v, tag);
      if (!mine) continue;
      if (!out.empty()) WriteFile(out + "/death." + tag, NowNs());
      std::cout << "probe " << tag << ": " << k << " " << *mine << std::endl;
      if (k == "--exit") std::exit(std::atoi(mine->c_str()));
      signal(SignalNumber(*mine), SIG_DFL);
      raise(SignalNumber(*mine));
    } else if (k == "--shm_setup") {
      if (ForMe(v, tag)) ShmSetup();
    } else if (k == "--shm_created") {
      if (ForMe(v, tag)) WriteFile(out + "/shm_name", ShmCreated());
    } else if (k == "--sleep") {
      if (auto mine = ForMe(v, tag)) Sleep(std::atof(mine->c_str()));
    }
  }
  return 0;
}
