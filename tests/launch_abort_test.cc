// The watchdog: failures stop the job and are explained (seed 002's ABORT
// line plus each cause), signals to the launcher stop every child, and no
// child outlives the launcher.
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "launch_test_util.h"

namespace flotilla::launch_test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

std::vector<std::string> LaunchArgs(const TempDir& dir, const std::vector<std::string>& options,
                                    const std::vector<std::string>& probe_args) {
  std::vector<std::string> argv = {FlotillaBin(), "launch", "--quiet", "--log_dir", dir / "log"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.push_back(ProbeBin());
  argv.push_back("--out");
  argv.push_back(dir.path());
  argv.insert(argv.end(), probe_args.begin(), probe_args.end());
  return argv;
}

// 4 ranks: rank 2 exits 3, rank 3 (which ignores SIGTERM) dies by SIGKILL
// a little later; ranks 0 and 1 would sleep for a minute.
TEST(LaunchAbort, NamesEveryFailedRankWithItsCause) {
  TempDir dir;
  Child launcher(LaunchArgs(dir, {"--nproc_per_node", "4", "--grace_period", "3"},
                            {"--ignore_term@3", "--store_barrier", "--print", "25", "--delay", "0.3", "--exit", "3@2",
                             "--delay", "0.7", "--signal", "KILL@3", "--sleep", "60"}),
                 dir.path());
  ASSERT_TRUE(WaitForFiles(dir.path(), "pid.", 4, seconds(30))) << launcher.Stderr();
  const auto pids = ProbePids(dir.path());
  const int code = launcher.WaitCode(seconds(30));
  const double exited_s = std::chrono::duration<double>(
      std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_EQ(code, 3) << "the first failure's exit code";
  const std::string err = launcher.Stderr();
  EXPECT_NE(err.find("ABORT!!! Out of all 4 trainers, the trainer process with rank=[2,3] was "
                     "aborted. Please check its log."),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("rank 2 (pid"), std::string::npos) << err;
  EXPECT_NE(err.find("exited with code 3"), std::string::npos) << err;
  EXPECT_NE(err.find("killed by signal SIGKILL (9)"), std::string::npos) << err;
  EXPECT_NE(err.find("OOM killer"), std::string::npos) << err;
  // The last 20 lines of each failed rank's log: its final words are there,
  // its first printed lines (25 were printed) are not.
  EXPECT_NE(err.find("| probe 2: --exit 3"), std::string::npos) << err;
  EXPECT_NE(err.find("| line 24 of 2"), std::string::npos) << err;
  EXPECT_EQ(err.find("| line 3 of 2"), std::string::npos) << err;
  EXPECT_NE(err.find("| probe 3: --signal KILL"), std::string::npos) << err;
  // Ranks 0 and 1 were not failures: they were stopped.
  EXPECT_EQ(err.find("rank 0 (pid"), std::string::npos) << err;
  // Every other process is gone within the grace period + 1 s of the failure.
  const double death_s = std::stoll(ReadText(dir / "death.2")) / 1e9;
  EXPECT_LE(exited_s - death_s, 3.0 + 1.0) << "launcher exit came too late after rank 2 died";
  for (pid_t p : pids) EXPECT_FALSE(Alive(p)) << "pid " << p << " outlived the launcher";
  EXPECT_NO_PROBES_LEFT(dir.path());
}

// Survivors that ignore SIGTERM are SIGKILLed once the grace period is over.
TEST(LaunchAbort, GracePeriodThenSigkill) {
  TempDir dir;
  const auto start = Clock::now();
  Child launcher(LaunchArgs(dir, {"--nproc_per_node", "3", "--grace_period", "1"},
                            {"--ignore_term", "--store_barrier", "--delay", "0.2", "--exit", "5@1", "--sleep", "60"}),
                 dir.path());
  EXPECT_EQ(launcher.WaitCode(seconds(30)), 5);
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_GE(took, 1.0) << "SIGKILL came before the grace period ended";
  EXPECT_NE(launcher.Stderr().find("rank=[1]"), std::string::npos) << launcher.Stderr();
  EXPECT_NE(launcher.Stderr().find("grace period over"), std::string::npos) << launcher.Stderr();
  EXPECT_NO_PROBES_LEFT(dir.path());
}

TEST(LaunchAbort, SigintStopsEveryChild) {
  TempDir dir;
  Child launcher(LaunchArgs(dir, {"--nproc_per_node", "3"}, {"--sleep", "60"}), dir.path());
  ASSERT_TRUE(WaitForFiles(dir.path(), "pid.", 3, seconds(30))) << launcher.Stderr();
  const auto pids = ProbePids(dir.path());
  launcher.Kill(SIGINT);
  EXPECT_EQ(launcher.WaitCode(seconds(10)), 128 + SIGINT);
  for (pid_t p : pids) EXPECT_FALSE(Alive(p)) << "pid " << p << " outlived the launcher";
  EXPECT_EQ(launcher.Stderr().find("ABORT!!!"), std::string::npos) << "a stop is not a failure";
  EXPECT_NO_PROBES_LEFT(dir.path());
}

// Waiting for a node that never comes (the rendezvous allows 120 s), the
// launcher still stops at once on SIGINT or SIGTERM.
TEST(LaunchAbort, SignalsAreHonouredWhileWaitingForOtherNodes) {
  for (int sig : {SIGINT, SIGTERM}) {
    TempDir dir;
    const std::string master = "127.0.0.1:" + std::to_string(FreePort());
    Child launcher(LaunchArgs(dir, {"--master", master, "--nnodes", "2"}, {"--sleep", "60"}),
                   dir.path());
    std::this_thread::sleep_for(Scaled(milliseconds(1500)));  // well inside the rendezvous
    const auto sent = Clock::now();
    launcher.Kill(sig);
    EXPECT_EQ(launcher.WaitCode(seconds(5)), 128 + sig) << launcher.Stderr();
    EXPECT_LT(Clock::now() - sent, seconds(3));
    EXPECT_NE(launcher.Stderr().find("while meeting the other nodes"), std::string::npos)
        << launcher.Stderr();
    EXPECT_NO_PROBES_LEFT(dir.path());
  }
}

TEST(LaunchAbort, SecondSignalKillsAtOnce) {
  TempDir dir;
  Child launcher(LaunchArgs(dir, {"--nproc_per_node", "2", "--grace_period", "60"},
                            {"--ignore_term", "--sleep", "60"}),
                 dir.path());
  ASSERT_TRUE(WaitForFiles(dir.path(), "pid.", 2, seconds(30))) << launcher.Stderr();
  launcher.Kill(SIGTERM);
  std::this_thread::sleep_for(milliseconds(300));
  launcher.Kill(SIGINT);
  EXPECT_EQ(launcher.WaitCode(seconds(10)), 128 + SIGTERM) << "not forced within 10 s";
  EXPECT_NE(launcher.Stderr().find("killing every process now"), std::string::npos);
  EXPECT_NO_PROBES_LEFT(dir.path());
}

// Even a launcher that is SIGKILLed takes its children with it
// (PR_SET_PDEATHSIG).
TEST(LaunchAbort, ChildrenDieWithAKilledLauncher) {
  TempDir dir;
  Child launcher(LaunchArgs(dir, {"--nproc_per_node", "2"}, {"--ignore_term", "--sleep", "60"}),
                 dir.path());
  ASSERT_TRUE(WaitForFiles(dir.path(), "pid.", 2, seconds(30))) << launcher.Stderr();
  launcher.Kill(SIGKILL);
  EXPECT_EQ(launcher.WaitCode(seconds(10)), 128 + SIGKILL);
  EXPECT_NO_PROBES_LEFT(dir.path());
}

// What a child started in its process group goes with it, whether the job
// fails or succeeds.
TEST(LaunchAbort, GrandchildrenAreStoppedToo) {
  for (const char* exit_code : {"0", "6"}) {
    TempDir dir;
    Child launcher(LaunchArgs(dir, {"--nproc_per_node", "2"},
                              {"--grandchild", "--store_barrier", "--exit", exit_code}),
                   dir.path());
    EXPECT_EQ(launcher.WaitCode(seconds(30)), std::atoi(exit_code)) << launcher.Stderr();
    EXPECT_EQ(ProbePids(dir.path()).size(), 4u) << "two probes and their two grandchildren";
    EXPECT_NO_PROBES_LEFT(dir.path());
  }
}

TEST(LaunchAbort, CrashDuringShutdownStillCounts) {
  // Rank 0 fails; rank 1 segfaults while the launcher is stopping the job:
  // both are reported, rank 2 (stopped by SIGTERM) is not.
  TempDir dir;
  Child launcher(LaunchArgs(dir, {"--nproc_per_node", "3", "--grace_period", "5"},
                            {"--ignore_term@1", "--store_barrier", "--delay", "0.2", "--exit", "7@0", "--delay", "0.5",
                             "--signal", "SEGV@1", "--sleep", "60"}),
                 dir.path());
  EXPECT_EQ(launcher.WaitCode(seconds(30)), 7);
  const std::string err = launcher.Stderr();
  EXPECT_NE(err.find("rank=[0,1]"), std::string::npos) << err;
  EXPECT_NE(err.find("SIGSEGV"), std::string::npos) << err;
  EXPECT_NO_PROBES_LEFT(dir.path());
}

}  // namespace
}  // namespace flotilla::launch_test
