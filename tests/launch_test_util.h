// Helpers for the launcher's process-level tests: start build/bin/flotilla
// as a child, wait for it with a deadline, read what the probes recorded,
// and make sure every process a test started is gone (killing leftovers by
// pid) when the test ends.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "flotilla/testing/process.h"

namespace flotilla::launch_test {

std::string BuildDir();
// The program `name` under build/bin.
std::string Bin(const std::string& name);
std::string FlotillaBin();
std::string ProbeBin();

// `d` times FLOTILLA_TEST_TIME_SCALE (set by sanitizer builds, whose
// processes start and run several times slower; 1 when unset): for a test's
// allowances for slow starts and slow reactions, never for the timeouts it
// gives Flotilla.
std::chrono::milliseconds Scaled(std::chrono::milliseconds d);

// A fresh directory under /tmp, removed (rm -rf) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A process the test started (flotilla/testing/process.h), with stdout and
// stderr in files under `output_dir`. The destructor SIGKILLs and reaps it
// (and its process group) if it still runs.
class Child : public testing::Process {
 public:
  // argv[0] is a path. `env` entries "NAME=value" are added to (or replace
  // in) the test's environment. With `netns`, runs under `ip netns exec`.
  Child(const std::vector<std::string>& argv, const std::string& output_dir,
        const std::vector<std::string>& env = {}, const std::string& netns = "");

  // Exit code (or 128 + signal) once exited; -1 on timeout (still running).
  int WaitCode(std::chrono::milliseconds timeout) { return Wait(timeout).value_or(-1); }
};

// True while `pid` exists and is not a zombie.
bool Alive(pid_t pid);
// Pids the probes wrote (`dir`/pid.*).
std::set<pid_t> ProbePids(const std::string& dir);
// Waits until `n` files `dir`/prefix* exist (not counting the probe's
// half-written *.tmp files); false on timeout.
bool WaitForFiles(const std::string& dir, const std::string& prefix, size_t n,
                  std::chrono::milliseconds timeout);
// Waits until none of `pids` is alive; false on timeout.
bool WaitGone(const std::set<pid_t>& pids, std::chrono::milliseconds timeout);
// SIGKILLs every pid still alive (test cleanup by pid).
void KillAll(const std::set<pid_t>& pids);

nlohmann::json ReadJson(const std::string& path);
std::string ReadText(const std::string& path);
// The last line of `text` that parses as a JSON object (a program's result
// line, with log lines around it); an empty object when there is none.
nlohmann::json LastJsonLine(const std::string& text);
// The pid of a child of `parent` whose environment holds `entry`
// ("NAME=value"), or -1.
pid_t FindChildWithEnv(pid_t parent, const std::string& entry);
// The environment one probe recorded (dir/env.TAG.json → "env").
nlohmann::json ProbeEnv(const std::string& dir, const std::string& tag);

// A TCP port that was free a moment ago (for --started_port tests only).
int FreePort();

// Fails the test unless the program at `path` (one this tree builds, e.g.
// Bin("train_with_fleet")) is there: a test never skips for want of what its
// own build makes; only a missing external engine may skip it.
#define ASSERT_BUILT(path)                                                        \
  ASSERT_EQ(::access(std::string(path).c_str(), X_OK), 0)                        \
      << (path) << " is not built: build the targets this test depends on"

// Kills the probes `dir` recorded and checks none is left: use at the end of
// every test that starts the launcher.
#define EXPECT_NO_PROBES_LEFT(dir)                                                 \
  do {                                                                             \
    auto pids_ = ::flotilla::launch_test::ProbePids(dir);                          \
    bool gone_ = ::flotilla::launch_test::WaitGone(pids_, std::chrono::seconds(5)); \
    ::flotilla::launch_test::KillAll(pids_);                                       \
    EXPECT_TRUE(gone_) << "probe processes outlived the launcher";                 \
  } while (0)

}  // namespace flotilla::launch_test
