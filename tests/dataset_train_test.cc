// TrainFromDataset on a bag-of-ids CTR model read from MultiSlot files: one
// thread gives exactly the losses and parameters of Executor::Run fed the
// same batches; two threads converge; InferFromDataset leaves parameters
// alone; worker errors (a malformed line, a dying pipe command, a failing
// op) reach the caller.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/api/sequence_layers.h"
#include "flotilla/common/error.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/io/dataset_feed.h"
#include "flotilla/io/dataset_trainer.h"

namespace flotilla::io {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kSeed = 5;

#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif
// Hogwild workers update the shared parameters without locks, by design:
// a race ThreadSanitizer reports. Under it, the tests train on one thread.
constexpr int kTrainThreads = kThreadSanitizer ? 1 : 2;

// ids (lod_level 1) → embedding → sum pool ++ dense[4] → fc 1; sigmoid loss.
struct Ctr {
  Program main, startup;
  Variable ids, dense, label, loss;

  Ctr() {
    ProgramGuard guard(main, startup);
    UniqueNameGuard names;
    main.set_random_seed(kSeed);
    startup.set_random_seed(kSeed);
    ids = layers::data("ids", {-1, 1}, DType::kInt64, false, 1);
    dense = layers::data("dense", {4});
    label = layers::data("label", {1});
    auto bag = layers::sequence_pool(layers::embedding(ids, {100, 8}, /*is_sparse=*/true), "sum");
    auto logit = layers::fc(layers::concat({bag, dense}, 1), 1);
    loss = layers::mean(layers::sigmoid_cross_entropy_with_logits(logit, label));
    optimizer::SGD(0.2f).minimize(loss);
  }
  std::vector<SlotSpec> Slots() const {
    return {{"ids", SlotType::kInt64}, {"dense", SlotType::kFloat32, {-1, 4}}, {"label", SlotType::kFloat32, {-1, 1}}};
  }
  std::vector<std::string> Params() const {
    std::vector<std::string> out;
    for (const VarDesc* v : main.global_block().AllVars()) {
      if (v->persistable && v->name.find("learning_rate") == std::string::npos) out.push_back(v->name);
    }
    return out;
  }
};

class DatasetTrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterAllOps();
    std::string pattern = (fs::temp_directory_path() / "flotilla_dataset_train_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `records` MultiSlot lines: 0-4 ids (label 1 when one is below 20),
  // 4 dense floats.
  std::string WriteData(const std::string& name, int records, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::string text;
    for (int r = 0; r < records; ++r) {
      const int n = static_cast<int>(rng() % 5);
      bool hot = false;
      text += std::to_string(n);
      for (int i = 0; i < n; ++i) {
        const int id = static_cast<int>(rng() % 100);
        hot = hot || id < 20;
        text += " " + std::to_string(id);
      }
      text += " 4";
      for (int i = 0; i < 4; ++i) text += " " + std::to_string(static_cast<int>(rng() % 100) / 100.0);
      text += std::string(" 1 ") + (hot ? "1" : "0") + "\n";
    }
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  std::unique_ptr<Dataset> MakeDataset(const Ctr& m, DatasetKind kind, std::vector<std::string> files,
                                       int threads = 1) {
    auto ds = std::make_unique<Dataset>(kind);
    ds->SetUseVar(m.Slots());
    MultiSlotParserOptions opt;
    opt.allow_empty_slots = true;
    ds->SetParserOptions(opt);
    ds->SetFileList(std::move(files));
    ds->SetBatchSize(16);
    ds->SetThreadNum(threads);
    if (kind == DatasetKind::kInMemory) ds->LoadIntoMemory();
    return ds;
  }

  static std::vector<float> Values(const Scope& scope, const std::string& name) {
    const Tensor& t = scope.GetVar(name).GetTensor();
    return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
  }

  fs::path dir_;
};

TEST_F(DatasetTrainTest, OneThreadMatchesRunFedTheSameBatches) {
  Ctr m;
  auto ds = MakeDataset(m, DatasetKind::kInMemory, {WriteData("part-0", 200, 1)});
  ASSERT_EQ(ds->BatchCount(), 13);

  Scope by_dataset, by_run;
  Executor exe;
  exe.Run(m.startup, {}, {}, &by_dataset);
  exe.Run(m.startup, {}, {}, &by_run);

  std::vector<float> dataset_losses;
  DatasetTrainOptions opt;
  opt.threads = 1;
  opt.fetch_list = {m.loss.name()};
  opt.fetch_info = {"loss"};
  opt.print_period = 1;
  std::vector<std::string> lines;
  opt.print = [&](const std::string& line) { lines.push_back(line); };
  opt.on_fetch = [&](int64_t, const std::vector<Tensor>& out) { dataset_losses.push_back(out[0].data<float>()[0]); };
  std::vector<std::vector<int64_t>> next_ids;  // what on_next_feed was handed, in order
  opt.on_next_feed = [&](const FeedMap& next) { next_ids.push_back(next.at("ids").ToVector<int64_t>()); };
  DatasetTrainStats stats = TrainFromDataset(m.main, *ds, &by_dataset, opt);
  EXPECT_EQ(stats.batches, 13);
  EXPECT_EQ(stats.instances, 200);

  std::vector<float> run_losses;
  for (int64_t b = 0; b < ds->BatchCount(); ++b) {
    SlotFeeds feeds = ToFeeds(ds->Batch(b));
    ASSERT_EQ(feeds.tensors.at("ids").lod(), LoD{feeds.offsets.at("ids")});
    run_losses.push_back(exe.Run(m.main, feeds.tensors, {m.loss.name()}, &by_run)[0].data<float>()[0]);
  }
  EXPECT_EQ(dataset_losses, run_losses);
  ASSERT_EQ(next_ids.size(), 12u);  // every batch but the first, before the one ahead of it ran
  for (size_t b = 0; b < next_ids.size(); ++b) {
    EXPECT_EQ(next_ids[b], ToFeeds(ds->Batch(static_cast<int64_t>(b) + 1)).tensors.at("ids").ToVector<int64_t>());
  }
  ASSERT_EQ(lines.size(), 13u);
  EXPECT_EQ(lines[0].rfind("batch: 1, loss: ", 0), 0u) << lines[0];
  for (const std::string& p : m.Params()) EXPECT_EQ(Values(by_dataset, p), Values(by_run, p)) << p;
}

TEST_F(DatasetTrainTest, TwoThreadsShareParametersAndConverge) {
  if (kThreadSanitizer) GTEST_SKIP() << "Hogwild updates race by design";
  Ctr m;
  for (DatasetKind kind : {DatasetKind::kInMemory, DatasetKind::kQueue}) {
    std::vector<std::string> files;
    for (int f = 0; f < 4; ++f) files.push_back(WriteData("part-" + std::to_string(f), 800, 10 + f));
    auto ds = MakeDataset(m, kind, files, 2);
    Scope scope;
    Executor exe;
    exe.Run(m.startup, {}, {}, &scope);
    auto eval = [&] {
      double sum = 0;
      auto test = MakeDataset(m, DatasetKind::kInMemory, {WriteData("test", 400, 99)});
      Program loss_only = m.main.Clone(/*for_test=*/true);
      for (int64_t b = 0; b < test->BatchCount(); ++b)
        sum += exe.Run(loss_only, ToFeeds(test->Batch(b)).tensors, {m.loss.name()}, &scope)[0].data<float>()[0];
      return sum / static_cast<double>(test->BatchCount());
    };
    const double before = eval();
    DatasetTrainOptions opt;
    opt.threads = 2;
    opt.print_period = 0;
    DatasetTrainStats stats;
    for (int pass = 0; pass < 3; ++pass) stats = TrainFromDataset(m.main, *ds, &scope, opt);
    EXPECT_EQ(stats.instances, 3200);
    ASSERT_EQ(stats.batches_per_thread.size(), 2u);
    EXPECT_EQ(stats.batches_per_thread[0] + stats.batches_per_thread[1], stats.batches);
    const double after = eval();
    EXPECT_LT(after, 0.5 * before) << "before " << before << " after " << after;
  }
}

TEST_F(DatasetTrainTest, InferLeavesParametersAlone) {
  Ctr m;
  auto ds = MakeDataset(m, DatasetKind::kInMemory, {WriteData("part-0", 100, 3)});
  Scope scope;
  Executor exe;
  exe.Run(m.startup, {}, {}, &scope);
  std::vector<std::vector<float>> before;
  for (const std::string& p : m.Params()) before.push_back(Values(scope, p));
  DatasetTrainOptions opt;
  opt.fetch_list = {m.loss.name()};
  opt.print_period = 1;
  int fetched = 0;
  opt.print = [](const std::string&) {};
  opt.on_fetch = [&](int64_t, const std::vector<Tensor>& out) { fetched += std::isfinite(out[0].data<float>()[0]); };
  for (int threads : {1, 2}) {  // worker 0, the one that prints, runs every batch of one thread
    opt.threads = threads;
    EXPECT_EQ(InferFromDataset(m.main, *ds, &scope, opt).instances, 100);
    if (threads == 1) {
      EXPECT_EQ(fetched, ds->BatchCount());
    }
  }
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(Values(scope, m.Params()[i]), before[i]) << m.Params()[i];
}

std::string TrainError(const Program& program, const Dataset& ds, Scope* scope, int threads) {
  DatasetTrainOptions opt;
  opt.threads = threads;
  try {
    TrainFromDataset(program, ds, scope, opt);
  } catch (const flotilla::Error& e) {
    return e.what();
  }
  return "";
}

TEST_F(DatasetTrainTest, QueueErrorsReachTheCaller) {
  Ctr m;
  Scope scope;
  Executor().Run(m.startup, {}, {}, &scope);
  const std::string good = WriteData("good", 300, 4);
  std::ofstream(dir_ / "bad") << "1 5 4 0.1 0.2 0.3 0.4 1 1\n1 7 4 0.1 0.2 0.3\n";
  auto bad = MakeDataset(m, DatasetKind::kQueue, {good, (dir_ / "bad").string()}, 2);
  const std::string malformed = TrainError(m.main, *bad, &scope, kTrainThreads);
  EXPECT_NE(malformed.find((dir_ / "bad").string() + ":2:"), std::string::npos) << malformed;

  auto dying = MakeDataset(m, DatasetKind::kQueue, {good}, 1);
  dying->SetPipeCommand("head -n 40; echo 'generator: out of data' >&2; exit 4");
  const std::string died = TrainError(m.main, *dying, &scope, kTrainThreads);
  EXPECT_NE(died.find("exited with status 4"), std::string::npos) << died;
  EXPECT_NE(died.find("generator: out of data"), std::string::npos) << died;
}

TEST_F(DatasetTrainTest, ChecksFetchInfoAndReportsOpErrors) {
  Ctr m;
  auto ds = MakeDataset(m, DatasetKind::kInMemory, {WriteData("part-0", 50, 6)});
  Scope scope;
  DatasetTrainOptions opt;
  opt.fetch_list = {m.loss.name()};
  opt.fetch_info = {"loss", "extra"};
  EXPECT_THROW(TrainFromDataset(m.main, *ds, &scope, opt), InvalidArgument);
  // Parameters never initialised: every worker's first op fails; the error names it.
  const std::string err = TrainError(m.main, *ds, &scope, 2);
  EXPECT_NE(err.find("op 'lookup_table': input W"), std::string::npos) << err;
}

}  // namespace
}  // namespace flotilla::io
