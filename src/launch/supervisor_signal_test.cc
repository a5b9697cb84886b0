// The supervisor never signals the process group of a child it has already
// reaped: once reaped, the group's id is free and may name an unrelated
// process group. Every kill() of this binary goes through the interposer
// below, which checks that a group it signals still has its leader
// unreaped (a zombie or alive) among this process's children.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>

#include "flotilla/common/file_util.h"
#include "flotilla/launch/signals.h"
#include "launch/job_channel.h"
#include "launch/supervisor.h"

namespace {
std::atomic<int> g_signals_to_reaped{0};
std::atomic<int> g_group_signals{0};
}  // namespace

// Interposes libc's kill() for the whole test binary.
extern "C" int kill(pid_t pid, int sig) {
  if (pid < -1) {
    ++g_group_signals;
    siginfo_t info{};
    if (waitid(P_PID, -pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 && errno == ECHILD) {
      ++g_signals_to_reaped;
    }
  }
  return static_cast<int>(syscall(SYS_kill, pid, sig));
}

namespace flotilla::launch {
namespace {

ClusterSpec TwoTrainers() {
  ClusterSpec spec;
  spec.nodes = {"127.0.0.1"};
  for (int i = 0; i < 2; ++i) {
    ProcessSpec p;
    p.id = p.local_rank = i;
    p.host = "127.0.0.1";
    p.port = 40000 + i;
    spec.trainers.push_back(p);
  }
  return spec;
}

class SupervisorSignals : public ::testing::Test {
 protected:
  void SetUp() override {
    BlockLauncherSignals();
    log_dir_ = ::testing::TempDir() + "flotilla_supervisor_" + std::to_string(getpid());
    MakeDirs(log_dir_);
    g_signals_to_reaped = 0;
    g_group_signals = 0;
  }
  void TearDown() override { RemoveAll(log_dir_); }
  RunResult Run(const std::vector<std::string>& command) {
    SignalFd signals;
    SupervisorOptions options;
    options.log_dir = log_dir_;
    options.relay_to_console = false;
    options.grace_period = std::chrono::milliseconds(500);
    Supervisor supervisor(options, signals);
    LocalChannel channel;
    ClusterSpec spec = TwoTrainers();
    return supervisor.Run(spec, command, channel,
                          {{"PATH=/usr/bin:/bin", "RANK=0"}, {"PATH=/usr/bin:/bin", "RANK=1"}});
  }
  std::string log_dir_;
};

TEST_F(SupervisorSignals, ReapedChildrenAreNeverSignalled) {
  // Rank 0 exits at once, rank 1 a little later: the supervisor reaps rank
  // 0 long before the run (and its clean-up) ends.
  RunResult r = Run({"/bin/sh", "-c", "[ \"$RANK\" = 1 ] && sleep 0.3; exit 0"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(g_signals_to_reaped.load(), 0)
      << g_signals_to_reaped << " of " << g_group_signals << " group signals hit reaped children";
}

TEST_F(SupervisorSignals, AFailureStopsTheOthersWithoutSignallingTheReaped) {
  RunResult r = Run({"/bin/sh", "-c", "[ \"$RANK\" = 1 ] && exit 3; sleep 30"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_GT(g_group_signals.load(), 0);  // rank 0 was stopped by its group
  EXPECT_EQ(g_signals_to_reaped.load(), 0)
      << g_signals_to_reaped << " of " << g_group_signals << " group signals hit reaped children";
}

}  // namespace
}  // namespace flotilla::launch
