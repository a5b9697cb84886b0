// Jobs started by something other than flotilla launch: the role-resolution
// chain (src/roles) gives every process its place. Here torchrun-style
// variables alone (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK — no Flotilla
// or Paddle variable, `env -i`) start seed 001's train_with_fleet on two
// ranks, which trains to exactly the loss `flotilla launch` gives; and
// `flotilla env --explain` says where each value came from.
#include <cstdlib>
#include <gtest/gtest.h>
#include <unistd.h>

#include "launch_test_util.h"

namespace flotilla::launch_test {
namespace {

using std::chrono::seconds;

// The JSON object on the last line of `text` that starts with '{'.
nlohmann::json LastJsonLine(const std::string& text) {
  size_t end = text.size();
  while (end > 0) {
    size_t start = text.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    if (text.compare(start, 1, "{") == 0) return nlohmann::json::parse(text.substr(start, end - start));
    if (start == 0) break;
    end = start - 1;
  }
  return nlohmann::json();
}

std::string Example() { return Bin("train_with_fleet"); }

const std::vector<std::string> kTrainArgs = {"--steps", "20", "--hidden", "64", "--warmup", "2",
                                             "--seed", "7", "--labels", "sum"};

// A clean environment: only PATH and `vars`.
std::vector<std::string> Clean(std::vector<std::string> vars, const std::vector<std::string>& argv) {
  // Only the job secret of the test's environment is kept: processes started
  // without the launcher need it to meet (docs/security.md).
  std::vector<std::string> out = {"/usr/bin/env", "-i", "PATH=/usr/bin:/bin"};
  if (const char* secret = std::getenv("FLOTILLA_JOB_SECRET")) {
    out.push_back(std::string("FLOTILLA_JOB_SECRET=") + secret);
  }
  out.insert(out.end(), vars.begin(), vars.end());
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

double LauncherLoss(const TempDir& dir) {
  std::vector<std::string> argv = {FlotillaBin(), "launch", "--quiet", "--log_dir", dir / "log",
                                   "--nproc_per_node", "2", Example()};
  argv.insert(argv.end(), kTrainArgs.begin(), kTrainArgs.end());
  Child launcher(argv, dir.path());
  EXPECT_EQ(launcher.WaitCode(seconds(60)), 0) << launcher.Stderr();
  return LastJsonLine(ReadText(dir / "log/workerlog.0")).value("loss", -1.0);
}

TEST(EngineEnv, TorchStyleVariablesStartATwoRankJob) {
  ASSERT_BUILT(Example());
  TempDir ref, dir;
  const double expected = LauncherLoss(ref);
  const std::string port = std::to_string(FreePort());
  std::vector<std::unique_ptr<Child>> ranks;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> argv = {Example()};
    argv.insert(argv.end(), kTrainArgs.begin(), kTrainArgs.end());
    ranks.push_back(std::make_unique<Child>(
        Clean({"MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port, "WORLD_SIZE=2",
               "RANK=" + std::to_string(r)}, argv), dir.path()));
  }
  for (auto& c : ranks) EXPECT_EQ(c->WaitCode(seconds(60)), 0) << c->Stderr();
  const nlohmann::json out = LastJsonLine(ranks[0]->Stdout());
  EXPECT_EQ(out.value("ranks", 0), 2) << ranks[0]->Stdout();
  EXPECT_EQ(out.value("loss", -2.0), expected) << "torch-style ranks and flotilla launch disagree";
  EXPECT_NE((ranks[0]->Stdout() + ranks[0]->Stderr()).find("worker 0 hosts the job's store"), std::string::npos);
}

TEST(EngineEnv, ExplainNamesEverySource) {
  TempDir dir;
  Child env(Clean({"RANK=1", "WORLD_SIZE=2", "MASTER_ADDR=10.1.2.3", "MASTER_PORT=29500",
                   "SLURM_STEP_ID=0", "SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_JOB_ID=77",
                   "SLURM_JOB_NODELIST=gpu[07-08]"},
                  {FlotillaBin(), "env", "--explain"}),
            dir.path());
  ASSERT_EQ(env.WaitCode(seconds(10)), 0) << env.Stderr();
  const std::string out = env.Stdout();
  EXPECT_NE(out.find("RANK (PyTorch)"), std::string::npos) << out;
  EXPECT_NE(out.find("agrees: SLURM_PROCID=1 (Slurm)"), std::string::npos) << out;
  EXPECT_NE(out.find("10.1.2.3:29500"), std::string::npos) << out;
  EXPECT_NE(out.find("overridden: SLURM_JOB_NODELIST (first host)"), std::string::npos) << out;
  EXPECT_NE(out.find("gpu07,gpu08"), std::string::npos) << out;
  Child conflict(Clean({"PADDLE_TRAINER_ID=0", "SLURM_STEP_ID=0", "SLURM_PROCID=1"},
                       {FlotillaBin(), "env"}), dir.path());
  EXPECT_EQ(conflict.WaitCode(seconds(10)), 2);
  EXPECT_NE(conflict.Stderr().find("PADDLE_TRAINER_ID=0 (Paddle) but SLURM_PROCID=1 (Slurm)"),
            std::string::npos) << conflict.Stderr();
}

}  // namespace
}  // namespace flotilla::launch_test
