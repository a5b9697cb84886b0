// Parameter-server training end to end, every process started here and
// ended by its pid: sync PS equals one process, dist_fit_a_line and
// wide_and_deep under the launcher in the three modes, save/restart of the
// servers' tables, servers leaving once every trainer finished, and a killed
// server failing the trainers with an error naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <thread>

#include "launch_test_util.h"

namespace flotilla {
namespace {

using launch_test::Bin;
using launch_test::Child;
using launch_test::TempDir;
using namespace std::chrono_literals;

std::string Worker() { return launch_test::BuildDir() + "/tests/ps_integration_worker"; }

// The last JSON object line of `out` (log lines may follow it in a merged
// log); a test failure when there is none.
nlohmann::json LastJson(const std::string& out) {
  nlohmann::json last = launch_test::LastJsonLine(out);
  if (last.empty()) ADD_FAILURE() << "no JSON line in:\n" << out;
  return last;
}

// Runs `argv` to completion (deadline `timeout`), expecting exit 0; its last line.
nlohmann::json RunToEnd(const std::vector<std::string>& argv, const TempDir& dir,
                        std::chrono::seconds timeout, const std::vector<std::string>& env = {}) {
  Child c(argv, dir.path(), env);
  int code = c.WaitCode(timeout);
  EXPECT_EQ(code, 0) << argv[0] << " stderr:\n" << c.Stderr() << "\nstdout:\n" << c.Stdout();
  return LastJson(c.Stdout());
}

std::string Loopback(int port) { return "127.0.0.1:" + std::to_string(port); }

// Sync PS with 2 pservers and 2 trainers against one process on the
// combined batch: every parameter within 1e-5 after 20 steps.
// `flags`: more worker flags (--schedule, --l2 C), the same for every process.
void ExpectSyncEqualsOneProcess(const std::string& optimizer, std::vector<std::string> flags = {}) {
  TempDir local_dir;
  std::vector<std::string> extra = {"--optimizer", optimizer};
  extra.insert(extra.end(), flags.begin(), flags.end());
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  nlohmann::json local = RunToEnd(with({Worker(), "equal", "--role", "local"}), local_dir, 60s);
  std::vector<int> ports = {launch_test::FreePort(), launch_test::FreePort()};
  std::string pservers = Loopback(ports[0]) + "," + Loopback(ports[1]);
  std::vector<std::unique_ptr<TempDir>> dirs;
  std::vector<std::unique_ptr<Child>> procs;
  for (int s = 0; s < 2; ++s) {
    dirs.push_back(std::make_unique<TempDir>());
    procs.push_back(std::make_unique<Child>(
        with({Worker(), "equal", "--role", "pserver", "--pservers", pservers, "--endpoint",
              Loopback(ports[s]), "--trainers", "2"}),
        dirs.back()->path()));
  }
  for (int t = 0; t < 2; ++t) {
    dirs.push_back(std::make_unique<TempDir>());
    procs.push_back(std::make_unique<Child>(
        with({Worker(), "equal", "--role", "trainer", "--pservers", pservers, "--trainers", "2",
              "--trainer_id", std::to_string(t)}),
        dirs.back()->path()));
  }
  for (auto& p : procs) EXPECT_EQ(p->WaitCode(120s), 0) << p->Stderr();  // servers exit 0 too
  for (int t = 2; t < 4; ++t) {
    nlohmann::json dist = LastJson(procs[t]->Stdout());
    ASSERT_EQ(dist.size(), local.size());
    for (auto& [name, values] : local.items()) {
      ASSERT_TRUE(dist.contains(name)) << name;
      ASSERT_EQ(dist[name].size(), values.size()) << name;
      float worst = 0;
      for (size_t i = 0; i < values.size(); ++i) {
        worst = std::max(worst, std::abs(values[i].get<float>() - dist[name][i].get<float>()));
      }
      EXPECT_LE(worst, 1e-5f) << optimizer << ": parameter " << name << " of trainer " << t - 2;
    }
  }
}

TEST(PsIntegration, SyncTwoTrainersEqualOneProcessAfter20SgdSteps) { ExpectSyncEqualsOneProcess("sgd"); }

// Momentum on the servers, including embedding rows that miss steps (the
// local op decays every row's velocity each step; servers catch rows up).
TEST(PsIntegration, SyncTwoTrainersEqualOneProcessAfter20MomentumSteps) {
  ExpectSyncEqualsOneProcess("momentum");
}

// A learning rate the trainers' program decays every step: each push
// carries the step's rate, and momentum rows catch up at the rates of the
// steps they missed.
TEST(PsIntegration, SyncTwoTrainersEqualOneProcessWithADecayingLearningRate) {
  ExpectSyncEqualsOneProcess("sgd", {"--schedule"});
  ExpectSyncEqualsOneProcess("momentum", {"--schedule"});
}

// Trainers push the decayed gradient (weight decay runs on the trainers).
TEST(PsIntegration, SyncTwoTrainersEqualOneProcessWithWeightDecay) {
  ExpectSyncEqualsOneProcess("momentum", {"--l2", "0.5"});
}

// Long enough to converge: initial values are random per process, and after
// 30 epochs the test MSE still depends on them by more than 15 %.
constexpr const char* kFitEpochs = "200";

double FitALineMse(const TempDir& dir) {
  return RunToEnd({Bin("fit_a_line"), "--epochs", kFitEpochs}, dir, 60s)["test_mse"].get<double>();
}

// dist_fit_a_line under `flotilla launch --server_num 2 --worker_num 2`;
// the trainers' last lines. (The launcher stops the servers itself once the
// trainers are done; servers leaving on their own is checked without it.)
std::vector<nlohmann::json> LaunchDistFitALine(const std::string& mode, const TempDir& dir) {
  Child launch({Bin("flotilla"), "launch", "--server_num", "2", "--worker_num", "2", "--log_dir",
                dir / "log", Bin("dist_fit_a_line"), "--mode", mode, "--epochs", kFitEpochs},
               dir.path());
  EXPECT_EQ(launch.WaitCode(120s), 0) << launch.Stderr();
  std::vector<nlohmann::json> out;
  for (int t = 0; t < 2; ++t) out.push_back(LastJson(launch_test::ReadText(dir / "log/workerlog." + std::to_string(t))));
  return out;
}

TEST(PsIntegration, DistFitALineSyncMatchesOneProcessAsyncAndGeoConverge) {
  TempDir dir;
  double single = FitALineMse(dir);
  for (const std::string mode : {"sync", "async", "geo"}) {
    TempDir run;
    auto trainers = LaunchDistFitALine(mode, run);
    for (const auto& t : trainers) {
      ASSERT_TRUE(t.contains("test_mse")) << mode << ": " << t.dump();
      double mse = t["test_mse"].get<double>();
      if (mode == "sync") {
        EXPECT_LE(std::abs(mse - single), 0.15 * single) << "sync " << mse << " vs one process " << single;
      } else {
        EXPECT_LT(mse, 2.0 * single) << mode << " did not converge: " << mse;
      }
    }
  }
}

TEST(PsIntegration, WideAndDeepReaches98PercentOfBayesAucInEveryMode) {
  for (const std::string mode : {"sync", "async", "geo"}) {
    TempDir run;
    Child launch({Bin("flotilla"), "launch", "--server_num", "1", "--worker_num", "2", "--log_dir",
                  run / "log", Bin("wide_and_deep"), "--mode", mode, "--train_samples", "60000",
                  "--test_samples", "5000", "--hidden_size", "64"},
                 run.path());
    ASSERT_EQ(launch.WaitCode(240s), 0) << launch.Stderr();
    nlohmann::json r = LastJson(launch_test::ReadText(run / "log/workerlog.0"));
    double auc = r["auc"].get<double>(), bayes = r["bayes_auc"].get<double>();
    EXPECT_GE(auc, 0.98 * bayes) << mode << ": " << r.dump();
    std::cout << r.dump() << std::endl;
  }
}

// The Fleet PS environment of a job whose servers listen on `ports`;
// `port` is this process's (servers) or any (the trainer).
std::vector<std::string> FleetEnv(const std::string& role, const std::vector<int>& ports, int port) {
  std::string list;
  for (int p : ports) list += (list.empty() ? "" : ",") + Loopback(p);
  return {"TRAINING_ROLE=" + role, "PADDLE_PSERVERS_IP_PORT_LIST=" + list, "PADDLE_TRAINERS_NUM=1",
          "PADDLE_TRAINER_ID=0", "POD_IP=127.0.0.1", "PADDLE_PORT=" + std::to_string(port)};
}

// One phase: `servers` servers and a trainer through the Fleet PS API.
nlohmann::json ResumePhase(int phase, const std::string& model_dir, const std::string& mode, int servers) {
  std::vector<int> ports;
  for (int s = 0; s < servers; ++s) ports.push_back(launch_test::FreePort());
  std::vector<std::string> args = {Worker(), "resume", "--phase", std::to_string(phase), "--model_dir", model_dir,
                                   "--steps", "30", "--mode", mode};
  std::vector<std::unique_ptr<TempDir>> dirs;
  std::vector<std::unique_ptr<Child>> server_procs;
  for (int port : ports) {
    dirs.push_back(std::make_unique<TempDir>());
    // Servers save where trainers ask only inside their model directory.
    std::vector<std::string> env = FleetEnv("PSERVER", ports, port);
    env.push_back("FLOTILLA_PS_MODEL_DIR=" + std::filesystem::path(model_dir).parent_path().string());
    server_procs.push_back(std::make_unique<Child>(args, dirs.back()->path(), env));
  }
  TempDir tdir;
  Child trainer(args, tdir.path(), FleetEnv("TRAINER", ports, ports[0]));
  EXPECT_EQ(trainer.WaitCode(60s), 0) << trainer.Stderr();
  for (auto& server : server_procs) {
    EXPECT_EQ(server->WaitCode(30s), 0) << "a server must leave once its trainer finished\n" << server->Stderr();
  }
  return LastJson(trainer.Stdout());
}

// Phase 2 must start exactly where phase 1 ended (30 steps: GEO's last
// sync, every 10 steps, lands on the last step before the save), also when
// phase 2 runs another number of servers (their tables are re-cut).
void CheckResume(const std::string& mode, int servers1 = 1, int servers2 = 1) {
  TempDir model;
  nlohmann::json first = ResumePhase(1, model / "tables", mode, servers1);
  nlohmann::json second = ResumePhase(2, model / "tables", mode, servers2);
  std::cout << mode << " phase 1 " << first.dump() << "\nphase 2 " << second.dump() << std::endl;
  float start1 = first["start_eval"], end1 = first["end_eval"], start2 = second["start_eval"];
  EXPECT_LT(end1, 0.5f * start1) << mode << ": phase 1 did not train: " << first.dump();
  EXPECT_NEAR(start2, end1, 1e-5f * std::max(1.0f, end1)) << mode << ": phase 2 did not start where phase 1 ended";
  EXPECT_LT(second["end_eval"].get<float>(), start1);
  // save_inference_model of a PS job holds the trained values.
  EXPECT_NEAR(first["infer_eval"].get<float>(), end1, 1e-4f * std::max(1.0f, end1));
}

TEST(PsIntegration, TablesSavedByOneServerContinueOnTwo) { CheckResume("sync", 1, 2); }

TEST(PsIntegration, TablesSavedByTwoServersContinueOnOne) { CheckResume("sync", 2, 1); }

TEST(PsIntegration, SavedTablesRestartServersAndTheLossContinues) { CheckResume("sync"); }

TEST(PsIntegration, GeoSavedTablesRestartServersAndTheLossContinues) { CheckResume("geo"); }

TEST(PsIntegration, KilledServerFailsTrainersWithErrorNamingIt) {
  // Seed 000's variables by hand: two servers on one port, different loopback addresses.
  int port = launch_test::FreePort();
  auto env = [&](const std::string& role, const std::string& extra) {
    return std::vector<std::string>{"PADDLE_TRAINING_ROLE=" + role, "PADDLE_PSERVER_IPS=127.0.0.1,127.0.0.2",
                                    "PADDLE_PSERVER_PORT=" + std::to_string(port), "PADDLE_TRAINERS=2",
                                    "FLOTILLA_PS_TIMEOUT_MS=3000", extra};
  };
  std::vector<std::string> args = {Bin("dist_fit_a_line"), "--epochs", "100000"};
  TempDir d0, d1, t0, t1;
  Child s0(args, d0.path(), env("PSERVER", "PADDLE_CURRENT_IP=127.0.0.1"));
  Child s1(args, d1.path(), env("PSERVER", "PADDLE_CURRENT_IP=127.0.0.2"));
  Child tr0(args, t0.path(), env("TRAINER", "PADDLE_TRAINER_ID=0"));
  Child tr1(args, t1.path(), env("TRAINER", "PADDLE_TRAINER_ID=1"));
  for (int i = 0; i < 300 && tr0.Stdout().find("Epoch") == std::string::npos; ++i) std::this_thread::sleep_for(100ms);
  ASSERT_NE(tr0.Stdout().find("Epoch"), std::string::npos) << "training did not start: " << tr0.Stderr();
  s1.Kill(SIGKILL);
  std::string dead = "127.0.0.2:" + std::to_string(port);
  for (Child* t : {&tr0, &tr1}) {
    int code = t->WaitCode(60s);
    EXPECT_NE(code, -1) << "a trainer hung after its server died";
    EXPECT_NE(code, 0);
    EXPECT_NE(t->Stderr().find(dead), std::string::npos) << "error does not name " << dead << ":\n" << t->Stderr();
  }
  s0.Kill(SIGKILL);  // left waiting for trainers that failed
}

}  // namespace
}  // namespace flotilla
