// Parameter-server jobs: servers and workers, the servers stopped gracefully
// once every worker has exited 0, and failures on either side explained.
#include <gtest/gtest.h>

#include "launch_test_util.h"

namespace flotilla::launch_test {
namespace {

using std::chrono::seconds;

std::vector<std::string> PsArgs(const TempDir& dir, const std::vector<std::string>& probe_args) {
  std::vector<std::string> argv = {FlotillaBin(), "launch", "--quiet", "--log_dir", dir / "log",
                                   "--server_num", "2", "--worker_num", "2", "--grace_period", "5",
                                   ProbeBin(), "--out", dir.path()};
  argv.insert(argv.end(), probe_args.begin(), probe_args.end());
  return argv;
}

TEST(LaunchPs, ServersStopWhenEveryWorkerSucceeded) {
  TempDir dir;
  // Servers would serve for a minute; workers train for 0.5 s.
  Child launcher(PsArgs(dir, {"--store_barrier", "--sleep", "60@s0", "--sleep", "60@s1", "--sleep", "0.5"}),
                 dir.path());
  ASSERT_TRUE(WaitForFiles(dir.path(), "pid.", 4, seconds(30))) << launcher.Stderr();
  const auto pids = ProbePids(dir.path());
  EXPECT_EQ(launcher.WaitCode(seconds(30)), 0) << launcher.Stderr();
  for (pid_t p : pids) EXPECT_FALSE(Alive(p)) << "pid " << p << " outlived the launcher";
  const std::string err = launcher.Stderr();
  EXPECT_NE(err.find("all 2 trainers finished; stopping the servers"), std::string::npos) << err;
  EXPECT_EQ(err.find("ABORT"), std::string::npos) << err;
  EXPECT_NE(ReadText(dir / "log/serverlog.0").find("probe s0"), std::string::npos);
  EXPECT_NE(ReadText(dir / "log/endpoints.log").find("PADDLE_PSERVERS_IP_PORT_LIST:"),
            std::string::npos);
  EXPECT_NO_PROBES_LEFT(dir.path());
}

TEST(LaunchPs, WorkerFailureAbortsTheJob) {
  TempDir dir;
  Child launcher(PsArgs(dir, {"--delay", "0.3", "--exit", "4@w1", "--sleep", "60"}), dir.path());
  EXPECT_EQ(launcher.WaitCode(seconds(30)), 4);
  const std::string err = launcher.Stderr();
  EXPECT_NE(err.find("ABORT!!! Out of all 2 trainers, the trainer process with rank=[1] was "
                     "aborted. Please check its log."), std::string::npos) << err;
  EXPECT_NO_PROBES_LEFT(dir.path());
}

TEST(LaunchPs, ServerFailureAbortsTheJob) {
  TempDir dir;
  Child launcher(PsArgs(dir, {"--delay", "0.3", "--signal", "SEGV@s1", "--sleep", "60"}), dir.path());
  EXPECT_EQ(launcher.WaitCode(seconds(30)), 128 + 11);
  const std::string err = launcher.Stderr();
  EXPECT_NE(err.find("ABORT!!! Out of all 2 servers, the server process with id=[1] was aborted."),
            std::string::npos) << err;
  EXPECT_NE(err.find("server 1 (pid"), std::string::npos) << err;
  EXPECT_NE(err.find("SIGSEGV"), std::string::npos) << err;
  EXPECT_NO_PROBES_LEFT(dir.path());
}

}  // namespace
}  // namespace flotilla::launch_test
