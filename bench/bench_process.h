// Processes of the system benches (bench_ps_train, bench_ps_ssd): start a
// program with its output in files (flotilla/testing/process.h), wait for it
// with a deadline, read its last JSON line. The processes a bench starts by
// hand are one job: they share the job secret of the bench's environment, or
// one the bench makes (as `flotilla launch` does). Header-only; each bench is
// one translation unit.
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "flotilla/common/error.h"
#include "flotilla/common/job_secret.h"
#include "flotilla/testing/process.h"

namespace flotilla::bench {

// Gives this process (and so every process it starts) a job secret in
// FLOTILLA_JOB_SECRET unless its environment names one or asks for an
// insecure job.
inline void EnsureJobSecret() {
  if (JobSecretFromEnv() || InsecureRequested()) return;
  setenv(kJobSecretEnv, GenerateJobSecret().c_str(), 1);
}

// Starts argv[0] (PATH searched) with `env` ("NAME=value") added, holding
// the bench's job secret; stdout goes to the file `out`, stderr to
// `out` + ".err". The process is ended when the returned Process is.
inline testing::Process Spawn(const std::vector<std::string>& argv,
                              const std::vector<std::string>& env, const std::string& out) {
  EnsureJobSecret();
  testing::ProcessOptions o{argv, env, std::filesystem::path(out).filename().string()};
  o.stdout_to = o.stderr_to = testing::Output::kFile;
  o.stdout_path = out;
  o.stderr_path = out + ".err";
  return testing::Process(std::move(o));
}

// Exit code (128 + signal when a signal ended it), or -1 when it outlived
// the deadline (then it is killed, and stderr says which it was).
inline int WaitOrKill(testing::Process& p, std::chrono::seconds deadline) {
  try {
    return p.Finish(deadline);
  } catch (const DeadlineExceeded& e) {
    std::cerr << e.what() << std::endl;
    return -1;
  }
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
