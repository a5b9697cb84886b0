// Heterogeneous parameter-server jobs end to end under the launcher, every
// process started here and ended by its pid: wide_and_deep with heter
// workers reaches the AUC of the plain PS job, and a heter worker that dies
// stops the job with an ABORT line naming it.
#include <gtest/gtest.h>

#include <csignal>
#include <thread>

#include "launch_test_util.h"

namespace flotilla {
namespace {

using launch_test::Bin;
using launch_test::Child;
using launch_test::TempDir;
using namespace std::chrono_literals;

// The model every run shares (async mode: heterogeneous jobs run async).
std::vector<std::string> WideAndDeep(const std::string& train_samples = "40000",
                                     const std::string& test_samples = "5000") {
  return {Bin("wide_and_deep"), "--mode", "async", "--train_samples", train_samples,
          "--test_samples", test_samples, "--hidden_size", "64"};
}

std::vector<std::string> Launch(const TempDir& run, const std::vector<std::string>& cluster,
                                const std::vector<std::string>& program) {
  std::vector<std::string> argv = {Bin("flotilla"), "launch", "--log_dir", run / "log"};
  argv.insert(argv.end(), cluster.begin(), cluster.end());
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

// Worker 0's result line of a finished job.
nlohmann::json RunJob(const std::vector<std::string>& cluster) {
  TempDir run;
  Child launch(Launch(run, cluster, WideAndDeep()), run.path());
  EXPECT_EQ(launch.WaitCode(300s), 0) << launch.Stderr();
  nlohmann::json r = launch_test::LastJsonLine(launch_test::ReadText(run / "log/workerlog.0"));
  std::cout << r.dump() << std::endl;
  return r;
}

TEST(PsHeter, WideAndDeepWithHeterWorkersReachesThePlainPsAuc) {
  const std::vector<std::string> plain_cluster = {"--server_num", "2", "--worker_num", "2"};
  nlohmann::json plain = RunJob(plain_cluster);
  std::vector<std::string> heter_cluster = plain_cluster;
  heter_cluster.insert(heter_cluster.end(), {"--heter_worker_num", "2"});
  nlohmann::json heter = RunJob(heter_cluster);
  ASSERT_TRUE(plain.contains("auc") && heter.contains("auc")) << plain.dump() << "\n" << heter.dump();
  EXPECT_NEAR(heter["auc"].get<double>(), plain["auc"].get<double>(), 0.005)
      << "plain " << plain.dump() << "\nheter " << heter.dump();
  EXPECT_GE(heter["auc"].get<double>(), 0.95 * heter["bayes_auc"].get<double>()) << heter.dump();
  EXPECT_EQ(heter["steps"], plain["steps"]);
}

TEST(PsHeter, EveryHeterWorkerRunsBatchesOfItsTrainer) {
  TempDir run;
  Child launch(Launch(run, {"--run_mode", "ps-heter", "--server_num", "1", "--worker_num", "2",
                            "--heter_worker_num", "2"},
                      WideAndDeep("3200", "1000")),
               run.path());
  ASSERT_EQ(launch.WaitCode(120s), 0) << launch.Stderr();
  for (const char* log : {"log/heterlog.0", "log/heterlog.1"}) {
    const std::string text = launch_test::ReadText(run / log);
    // 3200 samples of batch 64: 50 mini-batches from its one trainer.
    EXPECT_NE(text.find("ran 50 mini-batches for 1 trainer(s)"), std::string::npos) << log << ":\n" << text;
  }
  const std::string endpoints = launch_test::ReadText(run / "log/endpoints.log");
  EXPECT_NE(endpoints.find("PADDLE_HETER_TRAINER_IP_PORT_LIST"), std::string::npos) << endpoints;
}

TEST(PsHeter, AKilledHeterWorkerAbortsTheJobNamingIt) {
  TempDir run;
  Child launch(Launch(run, {"--server_num", "1", "--worker_num", "2", "--heter_worker_num", "2",
                            "--grace_period", "3"},
                      WideAndDeep("10000000")),
               run.path());
  pid_t heter = -1;
  for (int i = 0; i < 300 && heter < 0; ++i) {
    std::this_thread::sleep_for(100ms);
    heter = launch_test::FindChildWithEnv(launch.pid(), "PADDLE_HETER_TRAINER_ID=1");
  }
  ASSERT_GT(heter, 0) << "no heter worker 1 under the launcher:\n" << launch.Stderr();
  // Let training start, then kill heter worker 1.
  for (int i = 0; i < 300; ++i) {
    if (launch_test::ReadText(run / "log/heterlog.1").find(" listening on ") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  std::this_thread::sleep_for(1s);
  kill(heter, SIGKILL);
  const int code = launch.WaitCode(60s);
  EXPECT_NE(code, 0);
  EXPECT_NE(code, -1) << "the job did not stop after its heter worker died";
  const std::string err = launch.Stderr();
  EXPECT_NE(err.find("ABORT!!! Out of all 2 heter workers, the heter worker process with id=[1] was aborted"),
            std::string::npos) << err;
  EXPECT_NE(err.find("heter worker 1 (pid " + std::to_string(heter)), std::string::npos) << err;
}

}  // namespace
}  // namespace flotilla
