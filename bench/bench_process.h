// Processes of the system benches (bench_ps_train, bench_ps_ssd): start a
// program with its output in files, wait for it with a deadline, read its
// last JSON line. The processes a bench starts by hand are one job: they
// share the job secret of the bench's environment, or one the bench makes
// (as `flotilla launch` does). Header-only; each bench is one translation unit.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "flotilla/common/job_secret.h"

namespace flotilla::bench {

struct Proc {
  pid_t pid = -1;
  std::string out;  // stdout file; stderr goes to out + ".err"
};

// Gives this process (and so every process it starts) a job secret in
// FLOTILLA_JOB_SECRET unless its environment names one or asks for an
// insecure job.
inline void EnsureJobSecret() {
  if (JobSecretFromEnv() || InsecureRequested()) return;
  setenv(kJobSecretEnv, GenerateJobSecret().c_str(), 1);
}

// Starts argv[0] (PATH searched) with `env` ("NAME=value") added, holding
// the bench's job secret.
inline Proc Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                  const std::string& out) {
  EnsureJobSecret();
  Proc p{fork(), out};
  if (p.pid == 0) {
    for (const auto& e : env) putenv(strdup(e.c_str()));
    if (!freopen(out.c_str(), "w", stdout) || !freopen((out + ".err").c_str(), "w", stderr)) _exit(126);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  return p;
}

// Exit code, or -1 when it outlived the deadline (then it is killed).
inline int WaitOrKill(const Proc& p, std::chrono::seconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  int status = 0;
  while (waitpid(p.pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      kill(p.pid, SIGKILL);
      waitpid(p.pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The last line of `path` that is a JSON object (null when none).
inline nlohmann::json LastJson(const std::string& path) {
  std::ifstream in(path);
  nlohmann::json last;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '{') last = nlohmann::json::parse(line, nullptr, false);
  }
  return last;
}

// A fresh directory /tmp/<prefix>.XXXXXX.
inline std::string TempDir(const std::string& prefix) {
  std::string tmpl = "/tmp/" + prefix + ".XXXXXX";
  return mkdtemp(tmpl.data());
}

}  // namespace flotilla::bench
