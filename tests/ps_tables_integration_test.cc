// Sparse tables at CTR scale, end to end under `flotilla launch`:
// wide_and_deep with row admission and shrink keeps its AUC; an ssd table
// (rows beyond a small memory budget on disk) saved, restarted and loaded
// continues the loss curve exactly; a job whose server is killed resumes
// from a fleet checkpoint that holds the servers' tables. Every process is
// started here and ended by its pid (the launcher's, a server's).
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

#include "launch_test_util.h"

namespace flotilla {
namespace {

using launch_test::Bin;
using launch_test::Child;
using launch_test::TempDir;
using namespace std::chrono_literals;

// The servers' model directory: save and load requests stay inside it.
std::vector<std::string> ModelDir(const TempDir& run) { return {"FLOTILLA_PS_MODEL_DIR=" + run.path()}; }

// Runs wide_and_deep under the launcher with `servers` servers and
// `workers` workers; returns worker 0's last JSON line.
nlohmann::json Launch(const TempDir& run, const std::string& log, int workers,
                      std::vector<std::string> flags) {
  std::vector<std::string> argv = {Bin("flotilla"), "launch", "--server_num", "1", "--worker_num",
                                   std::to_string(workers), "--log_dir", run / log, Bin("wide_and_deep")};
  argv.insert(argv.end(), flags.begin(), flags.end());
  Child launch(argv, run.path(), ModelDir(run));
  EXPECT_EQ(launch.WaitCode(240s), 0) << launch.Stderr();
  std::istringstream lines(launch_test::ReadText(run / (log + "/workerlog.0")));
  nlohmann::json last;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line[0] == '{') last = nlohmann::json::parse(line, nullptr, false);
  }
  return last;
}

// The server's "pserver table {...}" lines: counters by table name.
std::map<std::string, nlohmann::json> TableCounters(const std::string& server_log) {
  std::map<std::string, nlohmann::json> out;
  std::istringstream lines(server_log);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("pserver table {");
    if (at == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line.substr(at + 14));
    out[j["table"].get<std::string>()] = j;
  }
  return out;
}

// Worker 0's "step N loss X" lines.
std::map<int, std::string> Losses(const std::string& worker_log) {
  std::map<int, std::string> out;
  const std::regex re(R"(worker 0 step (\d+) loss (\S+))");
  std::istringstream lines(worker_log);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, re)) out[std::stoi(m[1])] = m[2];
  }
  return out;
}

// Ids admitted at their second sighting, rows unseen for a pass dropped
// between 3 passes: far fewer rows, AUC within 0.005 of keeping every row.
TEST(PsTables, AdmissionAndShrinkKeepWideAndDeepsAucWithin0005) {
  TempDir run;
  const std::vector<std::string> common = {"--mode", "sync", "--train_samples", "60000",
                                           "--test_samples", "5000", "--hidden_size", "64"};
  nlohmann::json plain = Launch(run, "plain", 2, common);
  std::vector<std::string> ctr = common;
  ctr.insert(ctr.end(), {"--admit_count", "2", "--delete_after_unseen_passes", "1", "--passes", "3"});
  nlohmann::json pruned = Launch(run, "ctr", 2, ctr);
  ASSERT_TRUE(plain.contains("auc") && pruned.contains("auc")) << plain << pruned;
  const double gap = std::abs(plain["auc"].get<double>() - pruned["auc"].get<double>());
  std::cout << "AUC all rows " << plain["auc"] << ", admitted+shrunk " << pruned["auc"] << ", gap " << gap
            << std::endl;
  EXPECT_LE(gap, 0.005);
  auto all = TableCounters(launch_test::ReadText(run / "plain/serverlog.0"));
  auto kept = TableCounters(launch_test::ReadText(run / "ctr/serverlog.0"));
  ASSERT_TRUE(all.count("deep_emb") && kept.count("deep_emb"));
  std::cout << "rows " << all["deep_emb"] << "\n  vs " << kept["deep_emb"] << std::endl;
  EXPECT_LT(kept["deep_emb"]["rows"].get<int64_t>(), all["deep_emb"]["rows"].get<int64_t>() / 2);
  EXPECT_GT(kept["deep_emb"]["refused_sightings"].get<int64_t>(), 0);
  EXPECT_GT(kept["deep_emb"]["shrunk"].get<int64_t>(), 0);
  EXPECT_GT(pruned["shrunk_rows"].get<int64_t>(), 0);
}

// An ssd table with a 16 MiB budget spills most rows; saved after step
// 100 and loaded by a restarted job (skipping the samples trained on), it
// prints the same losses as the job that went on without the restart.
TEST(PsTables, SsdTableSavedRestartedAndLoadedContinuesTheLossCurve) {
  TempDir run;
  const std::vector<std::string> common = {
      "--mode", "sync", "--test_samples", "2000", "--hidden_size", "32", "--optimizer", "adagrad",
      "--embedding_dim", "16", "--vocab_per_slot", "100000", "--table_class", "ssd",
      "--memory_budget_mb", "16", "--ssd_path", run / "db", "--log_every", "10"};
  std::vector<std::string> first = common, second = common;
  first.insert(first.end(), {"--train_samples", "12800", "--save_dir", run / "save", "--save_at_step", "100"});
  second.insert(second.end(), {"--train_samples", "6400", "--load_dir", run / "save", "--skip_samples", "6400"});
  nlohmann::json through = Launch(run, "through", 1, first);
  nlohmann::json restarted = Launch(run, "restarted", 1, second);
  auto counters = TableCounters(launch_test::ReadText(run / "through/serverlog.0"));
  ASSERT_TRUE(counters.count("deep_emb"));
  EXPECT_GT(counters["deep_emb"]["spilled"].get<int64_t>(), 10000) << counters["deep_emb"];
  EXPECT_GT(counters["deep_emb"]["loaded"].get<int64_t>(), 1000) << counters["deep_emb"];
  auto a = Losses(launch_test::ReadText(run / "through/workerlog.0"));
  auto b = Losses(launch_test::ReadText(run / "restarted/workerlog.0"));
  ASSERT_EQ(b.size(), 10u);
  for (const auto& [step, loss] : b) EXPECT_EQ(loss, a.at(step + 100)) << "step " << step + 100;
  EXPECT_EQ(through["auc"], restarted["auc"]);
  // The servers removed their databases when they left.
  EXPECT_TRUE(!std::filesystem::exists(run / "db") || std::filesystem::is_empty(run / "db"));
}

// 2 servers x 2 workers, sync, checkpoints every 50 steps (the servers'
// tables inside). Server 1 is SIGKILLed once step 100 is saved: the job
// fails. Started again, it resumes from the newest checkpoint and prints the
// losses of a job that never stopped.
TEST(PsTables, KilledServerJobResumesFromAFleetCheckpointWithTheLossContinuous) {
  TempDir run;
  auto argv = [&](const std::string& log, const std::string& ckpt) {
    return std::vector<std::string>{
        Bin("flotilla"), "launch", "--server_num", "2", "--worker_num", "2", "--log_dir", run / log,
        Bin("wide_and_deep"), "--mode", "sync", "--train_samples", "19200", "--test_samples", "2000",
        "--hidden_size", "32", "--log_every", "10", "--checkpoint_dir", run / ckpt,
        "--checkpoint_every", "50"};
  };
  {
    Child job(argv("killed", "ckpt"), run.path(), ModelDir(run));
    // STATE.json is the last file of a checkpoint, present once it is committed.
    ASSERT_TRUE(launch_test::WaitForFiles(run / "ckpt/step-100", "STATE.json", 1, 120s)) << job.Stderr();
    const std::regex started(R"(started server 1 pid (\d+))");
    std::smatch m;
    const std::string out = job.Stdout() + job.Stderr();
    ASSERT_TRUE(std::regex_search(out, m, started)) << out;
    const pid_t server = std::stoi(m[1]);
    ASSERT_EQ(::kill(server, SIGKILL), 0);
    EXPECT_NE(job.WaitCode(120s), 0) << "a job that lost a server fails";
  }
  Child resumed(argv("resumed", "ckpt"), run.path(), ModelDir(run));
  ASSERT_EQ(resumed.WaitCode(240s), 0) << resumed.Stderr();
  Child reference(argv("reference", "ckpt_ref"), run.path(), ModelDir(run));
  ASSERT_EQ(reference.WaitCode(240s), 0) << reference.Stderr();
  const std::string log = launch_test::ReadText(run / "resumed/workerlog.0");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(log, m, std::regex(R"(resumed at step (\d+))"))) << log;
  const int from = std::stoi(m[1]);
  EXPECT_GE(from, 100);
  EXPECT_TRUE(std::filesystem::exists(run / "ckpt/step-300/ps_tables/deep_emb.server1-of-2.tbl"));
  auto after = Losses(log);
  auto whole = Losses(launch_test::ReadText(run / "reference/workerlog.0"));
  ASSERT_EQ(after.begin()->first, from + 10) << "the resumed job logs from its first step on";
  for (const auto& [step, loss] : after) {
    EXPECT_NEAR(std::stod(loss), std::stod(whole.at(step)), 1e-5) << "step " << step;
  }
}

}  // namespace
}  // namespace flotilla
