// bench_launch: how fast `flotilla launch` starts processes and how fast it
// reacts when one dies. Prints one JSON object per measurement:
//   start:        launcher exec → all N probes running (each wrote its pid file),
//                 and the launcher's whole run with probes that exit at once
//   death_to_exit: a rank exits 1 → the launcher has stopped the others and
//                 exited; once with survivors that obey SIGTERM, once with
//                 survivors that ignore it (so the grace period is paid)
// Open MPI's mpirun runs the same probes side by side as the peer (Paddle's
// launcher, not available here, polls its children every 3 s).
// Usage: bench_launch [--build DIR] [--repeat N]
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "flotilla/testing/process.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string g_build = FLOTILLA_BUILD_DIR;

double NowWallS() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string MakeTempDir() {
  char tmpl[] = "/tmp/flotilla_bench_launch.XXXXXX";
  return mkdtemp(tmpl);
}

size_t CountFiles(const std::string& dir, const std::string& prefix) {
  size_t n = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) n += std::string(e->d_name).rfind(prefix, 0) == 0;
    closedir(d);
  }
  return n;
}

// Starts a launcher with its output discarded.
flotilla::testing::Process Spawn(std::vector<std::string> args) {
  flotilla::testing::ProcessOptions o{std::move(args)};
  o.stdout_to = o.stderr_to = flotilla::testing::Output::kDiscard;
  return flotilla::testing::Process(std::move(o));
}

// The launcher's exit code (128 + signal); throws when it runs over 5 minutes.
int WaitExit(flotilla::testing::Process& launcher) {
  return launcher.Finish(std::chrono::minutes(5));
}

std::vector<std::string> LaunchArgs(const std::string& dir, int nproc, double grace,
                                    const std::vector<std::string>& probe_args) {
  std::vector<std::string> a = {g_build + "/bin/flotilla", "launch", "--quiet", "--log_dir",
                                dir + "/log", "--nproc_per_node", std::to_string(nproc),
                                "--grace_period", std::to_string(grace),
                                g_build + "/bin/launch_probe", "--out", dir};
  a.insert(a.end(), probe_args.begin(), probe_args.end());
  return a;
}

// The same job under Open MPI's mpirun, the peer launcher on this machine.
std::vector<std::string> MpirunArgs(const std::string& dir, int nproc,
                                    const std::vector<std::string>& probe_args) {
  std::vector<std::string> a = {"/usr/bin/mpirun", "--allow-run-as-root", "--oversubscribe",
                                "-np", std::to_string(nproc), g_build + "/bin/launch_probe",
                                "--out", dir};
  a.insert(a.end(), probe_args.begin(), probe_args.end());
  return a;
}

using ArgsFn = std::vector<std::string> (*)(const std::string&, int, double,
                                            const std::vector<std::string>&);

std::vector<std::string> FlotillaArgs(const std::string& dir, int nproc, double grace,
                                      const std::vector<std::string>& probe) {
  return LaunchArgs(dir, nproc, grace, probe);
}

std::vector<std::string> MpiArgs(const std::string& dir, int nproc, double,
                                 const std::vector<std::string>& probe) {
  return MpirunArgs(dir, nproc, probe);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void BenchStart(const char* impl, ArgsFn args, int nproc, int repeat) {
  std::vector<double> running_ms, total_ms;
  for (int i = 0; i < repeat; ++i) {
    std::string dir = MakeTempDir();
    auto start = Clock::now();
    auto launcher = Spawn(args(dir, nproc, 5, {}));
    while (CountFiles(dir, "pid.") < static_cast<size_t>(nproc)) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    running_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    WaitExit(launcher);
    total_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    std::system(("rm -rf " + dir).c_str());
  }
  std::cout << nlohmann::json{{"bench", "launch_start"}, {"impl", impl}, {"processes", nproc},
                              {"repeat", repeat}, {"all_running_ms", Median(running_ms)},
                              {"whole_run_ms", Median(total_ms)}}.dump()
            << std::endl;
}

void BenchDeathToExit(const char* impl, ArgsFn args, bool survivors_ignore_term, double grace,
                      int repeat) {
  std::vector<double> ms;
  int code = 0;
  for (int i = 0; i < repeat; ++i) {
    std::string dir = MakeTempDir();
    std::vector<std::string> probe = {"--delay", "0.3", "--exit", "1@1", "--sleep", "60"};
    if (survivors_ignore_term) probe.insert(probe.begin(), "--ignore_term");
    auto launcher = Spawn(args(dir, 4, grace, probe));
    code = WaitExit(launcher);
    const double exited = NowWallS();
    std::ifstream in(dir + "/death.1");
    long long ns = 0;
    in >> ns;
    ms.push_back((exited - ns / 1e9) * 1000.0);
    std::system(("rm -rf " + dir).c_str());
  }
  nlohmann::json line = {{"bench", "launch_death_to_exit"}, {"impl", impl},
                         {"processes", 4}, {"survivors_ignore_sigterm", survivors_ignore_term},
                         {"repeat", repeat}, {"launcher_exit_code", code},
                         {"death_to_exit_ms", Median(ms)}};
  if (grace > 0) {  // mpirun has no grace period option
    line["grace_period_s"] = grace;
    line["over_grace_ms"] = Median(ms) - (survivors_ignore_term ? grace * 1000 : 0);
  }
  std::cout << line.dump() << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--build") g_build = argv[i + 1];
    if (a == "--repeat") repeat = std::atoi(argv[i + 1]);
  }
  BenchStart("flotilla", FlotillaArgs, 8, repeat);
  BenchDeathToExit("flotilla", FlotillaArgs, false, 5.0, repeat);
  BenchDeathToExit("flotilla", FlotillaArgs, true, 1.0, repeat);
  if (access("/usr/bin/mpirun", X_OK) == 0) {
    BenchStart("mpirun", MpiArgs, 8, repeat);
    BenchDeathToExit("mpirun", MpiArgs, false, 0.0, repeat);
  }
  return 0;
}
