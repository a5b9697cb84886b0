// fleet's save: rank 0 writes while the others wait; a single process loads
// what two ranks trained and predicts exactly what they did.
#include <filesystem>
#include <fstream>
#include <mutex>

#include <gtest/gtest.h>

#include "fleet_test_util.h"
#include "flotilla/io/inference_model.h"

namespace flotilla::fleet::testing {
namespace {

constexpr float kLr = 0.05f;

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/fleet_save_test.XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

Tensor Predict(Executor& exe, const Model& m, Scope& scope, const FeedMap& feed) {
  Program test = m.main->Clone(/*for_test=*/true).Prune({m.prediction.name()});
  return exe.Run(test, {{"x", feed.at("x")}}, {m.prediction.name()}, &scope)[0];
}

float MaxAbsDiff(const Tensor& a, const Tensor& b) {
  return testing::MaxAbsDiff({{"t", a}}, {{"t", b}});
}

TEST(FleetSave, TwoRanksSaveOneProcessLoads) {
  TempDir tmp;
  const std::string ckpt = tmp / "persistables", model = tmp / "inference";
  MlpShape shape;
  FeedMap probe = BatchRows(shape, 999, 8, 0, 8);
  Tensor trained_prediction;
  std::mutex mu;
  RunRanks(2, [&](int rank, Fleet& fleet) {
    Model m = BuildMlp(shape, kLr, &fleet);
    Executor exe;
    Scope scope;
    exe.Run(*m.startup, {}, {}, &scope);
    for (int s = 0; s < 5; ++s) exe.Run(*m.main, BatchRows(shape, s, 16, rank * 8, rank * 8 + 8), {}, &scope);
    fleet.save_persistables(exe, ckpt, m.main.get(), &scope);
    // Every rank returns only once the checkpoint is complete.
    EXPECT_TRUE(std::filesystem::exists(ckpt + "/MANIFEST")) << "rank " << rank;
    fleet.save_inference_model(exe, model, {"x"}, {m.prediction.name()}, m.main.get(), &scope);
    EXPECT_TRUE(std::filesystem::exists(model + "/" + io::kModelFileName)) << "rank " << rank;
    if (rank == 0) {
      std::lock_guard<std::mutex> lock(mu);
      trained_prediction = Predict(exe, m, scope, probe);
    }
  });

  // A plain single-process program, freshly initialised, then loaded.
  Model single = BuildMlp(shape, kLr, nullptr);
  Executor exe;
  Scope scope;
  exe.Run(*single.startup, {}, {}, &scope);
  EXPECT_GT(MaxAbsDiff(Predict(exe, single, scope, probe), trained_prediction), 0.0f)
      << "a fresh model should predict differently";
  load_persistables(exe, ckpt, *single.main, &scope);
  EXPECT_EQ(MaxAbsDiff(Predict(exe, single, scope, probe), trained_prediction), 0.0f);

  Scope inference_scope;
  io::InferenceModel loaded = io::LoadInferenceModel(model, inference_scope);
  Tensor out = exe.Run(loaded.program, {{"x", probe.at("x")}}, loaded.fetch_names, &inference_scope)[0];
  EXPECT_EQ(MaxAbsDiff(out, trained_prediction), 0.0f);
}

TEST(FleetSave, AFailureOnRankZeroIsReportedOnEveryRank) {
  TempDir tmp;
  const std::string blocked = tmp / "file";
  { std::ofstream(blocked) << "not a directory"; }
  std::vector<std::string> errors(2);
  RunRanks(2, [&](int rank, Fleet& fleet) {
    Model m = BuildMlp(MlpShape{}, kLr, &fleet);
    Executor exe;
    Scope scope;
    exe.Run(*m.startup, {}, {}, &scope);
    try {
      fleet.save_persistables(exe, blocked + "/ckpt", m.main.get(), &scope);
    } catch (const Error& e) {
      errors[rank] = e.what();
    }
  });
  EXPECT_FALSE(errors[0].empty());
  EXPECT_NE(errors[1].find("failed on rank 0"), std::string::npos) << errors[1];
}

TEST(FleetFacade, ReportsTheRoleAndRejectsMisuse) {
  RunRanks(2, [](int rank, Fleet& fleet) {
    EXPECT_TRUE(fleet.is_worker());
    EXPECT_FALSE(fleet.is_server());
    EXPECT_EQ(fleet.is_first_worker(), rank == 0);
    EXPECT_EQ(fleet.worker_index(), rank);
    EXPECT_EQ(fleet.worker_num(), 2);
    EXPECT_THROW(fleet.main_program(), InvalidArgument);
    fleet.barrier_worker();
  });
  Fleet fleet;
  EXPECT_THROW(fleet.worker_index(), InvalidArgument);
  UserDefinedRoleMaker two(0, Role::kWorker, 2);
  try {
    fleet.init(two);
    FAIL() << "two workers without a store must be refused";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("PADDLE_MASTER"), std::string::npos) << e.what();
  }
}

TEST(FleetFacade, OneWorkerLeavesTheProgramAlone) {
  Fleet fleet;
  fleet.init(UserDefinedRoleMaker(0, Role::kWorker, 1));
  Model m = BuildMlp(MlpShape{}, kLr, &fleet);
  for (const auto& op : m.main->global_block().ops()) EXPECT_NE(op->type.rfind("c_", 0), 0u) << op->type;
  EXPECT_EQ(&fleet.main_program(), m.main.get());
  EXPECT_EQ(&fleet.startup_program(), m.startup.get());
}

}  // namespace
}  // namespace flotilla::fleet::testing
