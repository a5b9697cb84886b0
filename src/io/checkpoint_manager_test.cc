#include "flotilla/io/checkpoint_manager.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "flotilla/common/file_util.h"
#include "io/testing/temp_dir.h"

namespace flotilla::io {
namespace {

class CheckpointManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"w", "velocity"}) {
      VarDesc& v = program.global_block().CreateVar(name);
      v.shape = {2};
      v.dtype = DType::kFloat32;
      v.persistable = true;
    }
  }
  void Fill(float base) {
    *scope.Var("w")->GetMutableTensor() = Tensor::FromVector<float>({base, base + 1}, {2});
    *scope.Var("velocity")->GetMutableTensor() = Tensor::FromVector<float>({-base, 0}, {2});
  }

  Program program;
  Scope scope;
  testing::TempDir tmp;
};

TEST_F(CheckpointManagerTest, NoCheckpointYet) {
  CheckpointManager ckpt(tmp / "none");
  EXPECT_FALSE(ckpt.LatestStep().has_value());
  EXPECT_TRUE(ckpt.Steps().empty());
  Scope fresh;
  EXPECT_THROW(ckpt.Load(program, fresh), NotFound);
}

TEST_F(CheckpointManagerTest, ResumesFromTheLatestWithItsState) {
  CheckpointManager ckpt(tmp / "ckpt");
  for (int64_t step : {10, 20}) {
    Fill(static_cast<float>(step));
    TrainingState s;
    s.step = step;
    s.rng_seed = 1000 + static_cast<uint64_t>(step);
    s.reader = {2, step / 10};
    s.extra = R"({"lr":0.5})";
    ckpt.Save(program, scope, s);
  }
  EXPECT_EQ(ckpt.LatestStep(), 20);
  Scope fresh;
  TrainingState s = ckpt.Load(program, fresh);
  EXPECT_EQ(s.step, 20);
  EXPECT_EQ(s.rng_seed, 1020u);
  EXPECT_EQ(s.reader.pass, 2);
  EXPECT_EQ(s.reader.batches, 2);
  EXPECT_EQ(s.extra, R"({"lr":0.5})");
  EXPECT_EQ(fresh.GetVar("w").GetTensor().data<float>()[0], 20.0f);
  EXPECT_EQ(fresh.GetVar("velocity").GetTensor().data<float>()[0], -20.0f);
  Scope older;
  EXPECT_EQ(ckpt.Load(program, older, 10).step, 10);
  EXPECT_EQ(older.GetVar("w").GetTensor().data<float>()[0], 10.0f);
  EXPECT_THROW(ckpt.Load(program, older, 15), NotFound);
}

TEST_F(CheckpointManagerTest, KeepsOnlyTheNewest) {
  CheckpointManager ckpt(tmp / "ckpt", /*keep=*/2);
  for (int64_t step = 1; step <= 5; ++step) {
    Fill(1);
    ckpt.Save(program, scope, {step});
  }
  EXPECT_EQ(ckpt.Steps(), (std::vector<int64_t>{4, 5}));
  EXPECT_FALSE(FileExists(ckpt.StepDir(3)));
  EXPECT_THROW(CheckpointManager(tmp / "x", 0), InvalidArgument);
}

TEST_F(CheckpointManagerTest, IgnoresLeftoversOfAnInterruptedSave) {
  CheckpointManager ckpt(tmp / "ckpt");
  Fill(1);
  ckpt.Save(program, scope, {3});
  MakeDirs(tmp / "ckpt/step-9.tmp.123");  // a save killed before its rename
  MakeDirs(tmp / "ckpt/step-8");          // no STATE.json: not a checkpoint
  EXPECT_EQ(ckpt.LatestStep(), 3);
}

// A job killed mid-save or mid-prune leaves temporaries; the next save
// removes them (they would pile up, a job killed again and again) and
// leaves everything that is not its own alone.
TEST_F(CheckpointManagerTest, TheNextSaveRemovesLeftoversOfKilledSavesAndPrunes) {
  CheckpointManager ckpt(tmp / "ckpt", /*keep=*/2);
  Fill(1);
  ckpt.Save(program, scope, {3});
  MakeDirs(tmp / "ckpt/step-9.tmp.123/ps_tables");  // a save killed before its rename
  MakeDirs(tmp / "ckpt/step-1.old.456");            // a prune killed while removing
  MakeDirs(tmp / "ckpt/step-2");                     // removed part-way: no STATE.json
  MakeDirs(tmp / "ckpt/step-x.tmp.1");               // not ours
  MakeDirs(tmp / "ckpt/notes");
  ckpt.Save(program, scope, {4});
  for (const char* gone : {"step-9.tmp.123", "step-1.old.456", "step-2"}) {
    EXPECT_FALSE(FileExists(tmp / (std::string("ckpt/") + gone))) << gone;
  }
  EXPECT_TRUE(FileExists(tmp / "ckpt/step-x.tmp.1"));
  EXPECT_TRUE(FileExists(tmp / "ckpt/notes"));
  EXPECT_EQ(ckpt.Steps(), (std::vector<int64_t>{3, 4}));
  ckpt.Save(program, scope, {5});  // prunes step 3 without leaving anything
  EXPECT_EQ(ckpt.Steps(), (std::vector<int64_t>{4, 5}));
  EXPECT_FALSE(FileExists(tmp / ("ckpt/step-3.old." + std::to_string(getpid()))));
  EXPECT_FALSE(FileExists(ckpt.StepDir(3)));
}

TEST_F(CheckpointManagerTest, AFailedSaveKeepsThePreviousCheckpoint) {
  CheckpointManager ckpt(tmp / "ckpt");
  Fill(1);
  ckpt.Save(program, scope, {1});
  VarDesc& v = program.global_block().CreateVar("missing");
  v.shape = {1};
  v.persistable = true;
  EXPECT_THROW(ckpt.Save(program, scope, {2}), NotFound);
  EXPECT_EQ(ckpt.Steps(), (std::vector<int64_t>{1}));
}

}  // namespace
}  // namespace flotilla::io
