#include "flotilla/testing/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "flotilla/common/error.h"
#include "flotilla/common/file_util.h"

namespace flotilla::testing {
namespace {

using namespace std::chrono_literals;

ProcessOptions Shell(const std::string& script) { return {{"/bin/sh", "-c", script}}; }

// True while `pid` runs (a zombie does not: whoever adopted it may not reap).
bool Exists(pid_t pid) {
  std::string stat;
  try {
    stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  } catch (const NotFound&) {
    return false;
  }
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// Waits (up to 5 s) for `pid` to stop running.
bool Gone(pid_t pid) {
  for (int i = 0; i < 500 && Exists(pid); ++i) std::this_thread::sleep_for(10ms);
  return !Exists(pid);
}

TEST(Process, ExitCodeAndCapturedStreams) {
  ProcessOptions o = Shell("echo out; echo err >&2; exit 3");
  o.stdout_to = o.stderr_to = Output::kCapture;
  Process p(std::move(o));
  EXPECT_EQ(p.Wait(10s), 3);
  EXPECT_EQ(p.Wait(0ms), 3) << "the same code once ended";
  EXPECT_EQ(p.Stdout(), "out\n");
  EXPECT_EQ(p.Stderr(), "err\n");
}

TEST(Process, StderrWithStdoutAndFiles) {
  char dir[] = "/tmp/flotilla_process_test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  ProcessOptions o = Shell("echo one; echo two >&2");
  o.stdout_to = Output::kFile;
  o.stdout_path = std::string(dir) + "/out";
  o.stderr_to = Output::kStdout;
  Process p(std::move(o));
  EXPECT_EQ(p.Finish(10s), 0);
  EXPECT_EQ(p.Stdout(), "one\ntwo\n");
  EXPECT_EQ(ReadFile(std::string(dir) + "/out"), "one\ntwo\n");
  EXPECT_EQ(p.Stderr(), "");
  std::system(("rm -rf " + std::string(dir)).c_str());
}

TEST(Process, EnvironmentAddsToAndReplacesThisProcesses) {
  setenv("FLOTILLA_PROCESS_TEST_KEPT", "kept", 1);
  setenv("FLOTILLA_PROCESS_TEST_SET", "old", 1);
  ProcessOptions o = Shell("echo $FLOTILLA_PROCESS_TEST_KEPT $FLOTILLA_PROCESS_TEST_SET");
  o.env = {"FLOTILLA_PROCESS_TEST_SET=new"};
  o.stdout_to = Output::kCapture;
  Process p(std::move(o));
  EXPECT_EQ(p.Finish(10s), 0);
  EXPECT_EQ(p.Stdout(), "kept new\n");
}

TEST(Process, ProgramsAreLookedUpOnPath) {
  ProcessOptions o{{"true"}};
  EXPECT_EQ(Process(std::move(o)).Finish(10s), 0);
}

TEST(Process, AMissingProgramThrowsNamingIt) {
  try {
    Process p(ProcessOptions{{"/no/such/program"}});
    FAIL() << "started a missing program";
  } catch (const NotFound& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/program"), std::string::npos) << e.what();
  }
}

TEST(Process, FinishKillsAProcessOverItsTimeAndNamesIt) {
  ProcessOptions o{{"sleep", "30"}};
  o.name = "the sleeper";
  Process p(std::move(o));
  const pid_t pid = p.pid();
  EXPECT_FALSE(p.Wait(0ms).has_value());
  try {
    p.Finish(100ms);
    FAIL() << "a sleeping process finished";
  } catch (const DeadlineExceeded& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the sleeper (pid " + std::to_string(pid) + ") still ran after 100 ms"),
              std::string::npos)
        << what;
  }
  EXPECT_FALSE(Exists(pid)) << "killed and reaped";
  EXPECT_EQ(p.Wait(0ms), 128 + SIGKILL);
}

TEST(Process, DestructorEndsTheProcessAndItsGroup) {
  pid_t shell = -1, child = -1;
  {
    // The shell starts a sleep in its group and prints the sleep's pid.
    ProcessOptions o = Shell("sleep 30 & echo $!; wait");
    o.stdout_to = Output::kCapture;
    Process p(std::move(o));
    shell = p.pid();
    for (int i = 0; i < 500 && p.Stdout().empty(); ++i) std::this_thread::sleep_for(10ms);
    child = std::atoi(p.Stdout().c_str());
    ASSERT_GT(child, 0);
    EXPECT_EQ(getpgid(child), shell) << "the process's group";
  }
  EXPECT_FALSE(Exists(shell));
  EXPECT_TRUE(Gone(child)) << "the process group is killed too";
}

TEST(Process, KillSignalsAndTerminateEscalates) {
  Process p(ProcessOptions{{"sleep", "30"}});
  p.Kill(SIGTERM);
  EXPECT_EQ(p.Wait(10s), 128 + SIGTERM);

  // A process that ignores SIGTERM is killed once the grace runs out.
  ProcessOptions o = Shell("trap '' TERM; echo ready; while :; do sleep 0.05; done");
  o.stdout_to = Output::kCapture;
  Process stubborn(std::move(o));
  for (int i = 0; i < 500 && stubborn.Stdout().empty(); ++i) std::this_thread::sleep_for(10ms);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(stubborn.Terminate(200ms), 128 + SIGKILL);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
}

TEST(Process, MovesOwnership) {
  Process a(ProcessOptions{{"sleep", "30"}});
  const pid_t pid = a.pid();
  Process b(std::move(a));
  EXPECT_EQ(b.pid(), pid);
  EXPECT_EQ(a.pid(), -1);  // NOLINT(bugprone-use-after-move): the moved-from state
  EXPECT_FALSE(a.Wait(0ms).has_value());
  {
    Process c(ProcessOptions{{"true"}});
    c = std::move(b);
    EXPECT_EQ(c.pid(), pid);
    EXPECT_TRUE(Exists(pid));
  }
  EXPECT_FALSE(Exists(pid)) << "ended by its last owner";
}

}  // namespace
}  // namespace flotilla::testing
