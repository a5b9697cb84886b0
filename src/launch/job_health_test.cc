// What the launcher's /healthz and /readyz answer as a job goes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "flotilla/common/file_util.h"
#include "launch/job_health.h"

namespace flotilla::launch {
namespace {

namespace fs = std::filesystem;

ProcessView View(int rank, bool running, std::string state, std::string status) {
  ProcessSpec spec;
  spec.id = rank;
  return {spec, 100 + rank, running, std::move(state), std::move(status), ""};
}

class JobHealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("flotilla_job_health." + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(JobHealthTest, ReadyOnlyWhileEveryProcessRuns) {
  JobHealth health(dir_.string());
  EXPECT_EQ(health.Ready(), std::make_pair(false, std::string("not ready: joining the job "
                                                              "(rendezvous)")));
  health.Status({View(0, true, "running", "running"), View(1, true, "running", "running")});
  EXPECT_EQ(health.Ready(), std::make_pair(true, std::string("ready: 2 processes running")));
  health.Status({View(0, true, "running", "running"),
                 View(1, false, "failed", "killed by signal SIGKILL (9)")});
  EXPECT_EQ(health.Ready().second, "not ready: rank 1 failed: killed by signal SIGKILL (9)");
  health.Joining("restarting after a membership change (exit code 1)");
  EXPECT_FALSE(health.Ready().first);
  EXPECT_NE(health.Ready().second.find("membership change"), std::string::npos);
}

TEST_F(JobHealthTest, LiveUntilAProcessReportsAStall) {
  JobHealth health(dir_.string());
  EXPECT_EQ(health.Live(), std::make_pair(true, std::string("ok")));
  WriteFileAtomic((dir_ / "rank2.stalled").string(),
                  "rank 2: allreduce #17 (hang comm 0) pending for 3095 ms\n");
  EXPECT_EQ(health.Live(),
            std::make_pair(false, std::string("stalled: rank 2: allreduce #17 (hang comm 0) "
                                              "pending for 3095 ms")));
  EXPECT_EQ(FirstStallMarker((dir_ / "missing").string()), "");
}

}  // namespace
}  // namespace flotilla::launch
