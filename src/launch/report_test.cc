#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "launch/log_file.h"
#include "launch/rendezvous.h"
#include "launch/report.h"

namespace flotilla::launch {
namespace {

TEST(Report, AbortLineNamesRanksAndCauses) {
  ClusterSpec spec;
  for (int i = 0; i < 4; ++i) spec.trainers.push_back(ProcessSpec{Role::kTrainer, i, 0, i, "h", 1});
  RunResult r;
  ProcessOutcome a{spec.trainers[3], 11, {}, "log/workerlog.3", {"oops"}};
  a.status.signaled = true;
  a.status.signal = SIGKILL;
  ProcessOutcome b{spec.trainers[2], 10, {}, "log/workerlog.2", {"bye"}};
  b.status.code = 3;
  r.failed = {a, b};
  std::string text = AbortReport(spec, r);
  EXPECT_NE(text.find("ABORT!!! Out of all 4 trainers, the trainer process with rank=[2,3] was "
                      "aborted. Please check its log."), std::string::npos) << text;
  EXPECT_NE(text.find("exited with code 3"), std::string::npos);
  EXPECT_NE(text.find("SIGKILL"), std::string::npos);
  EXPECT_NE(text.find("OOM killer"), std::string::npos);
  EXPECT_NE(text.find("| oops"), std::string::npos);
}

TEST(Report, AbortLineNamesHeterWorkers) {
  ClusterSpec spec;
  for (int i = 0; i < 2; ++i) spec.heter_workers.push_back(ProcessSpec{Role::kHeterWorker, i, 0, i, "h", 1});
  RunResult r;
  ProcessOutcome a{spec.heter_workers[1], 12, {}, "log/heterlog.1", {"boom"}};
  a.status.code = 1;
  r.failed = {a};
  std::string text = AbortReport(spec, r);
  EXPECT_NE(text.find("ABORT!!! Out of all 2 heter workers, the heter worker process with id=[1] "
                      "was aborted."), std::string::npos) << text;
  EXPECT_NE(text.find("heter worker 1 (pid 12"), std::string::npos) << text;
}

TEST(LastLines, KeepsTheEnd) {
  EXPECT_EQ(LastLines("a\nb\nc\n", 2), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(LastLines("a\nb", 5), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(LastLines("", 3).empty());
}

}  // namespace
}  // namespace flotilla::launch
