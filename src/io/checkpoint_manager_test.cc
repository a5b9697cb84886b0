#include "flotilla/io/checkpoint_manager.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "flotilla/common/file_util.h"
#include "flotilla/common/logging.h"
#include "io/testing/temp_dir.h"
#include "manifest.h"

namespace flotilla::io {
namespace {

namespace fs = std::filesystem;

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

// A job killed mid-save or mid-prune leaves temporaries carrying Flotilla's
// marker; the next save removes them (they would pile up, a job killed
// again and again) and leaves everything that is not its own alone.
TEST_F(CheckpointManagerTest, TheNextSaveRemovesLeftoversOfKilledSavesAndPrunes) {
  CheckpointManager ckpt(tmp / "ckpt", /*keep=*/2);
  Fill(1);
  ckpt.Save(program, scope, {3});
  for (const char* ours : {"step-9.tmp.32509.b85f183b6a660467", "step-1.old.456.0a1b"}) {
    MakeDirs(tmp / "ckpt/" + ours + "/ps_tables");  // a save killed before its rename, a prune
    WriteFileAtomic(tmp / "ckpt/" + ours + "/" + internal::kMarkerName, "");
    WriteFileAtomic(tmp / "ckpt/" + ours + "/ps_tables/w.server0-of-2.tbl", "rows");
  }
  MakeDirs(tmp / "ckpt/step-8.tmp.77.0a1b");  // killed before its marker: empty
  MakeDirs(tmp / "ckpt/step-7.tmp.1/data");   // no marker, not empty: not ours
  MakeDirs(tmp / "ckpt/step-x.tmp.1");
  MakeDirs(tmp / "ckpt/notes");
  ckpt.Save(program, scope, {4});
  for (const char* gone :
       {"step-9.tmp.32509.b85f183b6a660467", "step-1.old.456.0a1b", "step-8.tmp.77.0a1b"}) {
    EXPECT_FALSE(FileExists(tmp / (std::string("ckpt/") + gone))) << gone;
  }
  for (const char* kept : {"step-7.tmp.1", "step-x.tmp.1", "notes"}) {
    EXPECT_TRUE(FileExists(tmp / (std::string("ckpt/") + kept))) << kept;
  }
  EXPECT_EQ(ckpt.Steps(), (std::vector<int64_t>{3, 4}));
  ckpt.Save(program, scope, {5});  // prunes step 3 without leaving anything
  EXPECT_EQ(ckpt.Steps(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp / "ckpt"), fs::directory_iterator()), 5)
      << "step-4, step-5 and the three that are not Flotilla's";
  EXPECT_FALSE(FileExists(ckpt.StepDir(3)));
}

// Issue 32, finding 4: the clean-up deleted a user's "step-9" (it had no
// STATE.json), with what was in it.
TEST_F(CheckpointManagerTest, AUsersStepDirectoryIsNeverDeleted) {
  CheckpointManager ckpt(tmp / "ckpt", /*keep=*/1);
  MakeDirs(tmp / "ckpt/step-9");
  WriteFileAtomic(tmp / "ckpt/step-9/notes.txt", "mine\n");
  Fill(1);
  for (int64_t step : {10, 11, 12}) ckpt.Save(program, scope, {step});
  EXPECT_EQ(ReadFile(tmp / "ckpt/step-9/notes.txt"), "mine\n");
  EXPECT_EQ(ckpt.Steps(), (std::vector<int64_t>{12}));
}

class CheckpointTamperTest : public CheckpointManagerTest {
 protected:
  void SetUp() override {
    CheckpointManagerTest::SetUp();
    for (int64_t step : {10, 20}) {
      Fill(static_cast<float>(step));
      ckpt.Save(program, scope, {step});
    }
  }
  // Resumes as a restarted job does; returns the step and what was logged.
  std::pair<int64_t, std::string> Resume() {
    log::Capture logged;
    Scope fresh;
    const TrainingState s = ckpt.Load(program, fresh);
    EXPECT_EQ(fresh.GetVar("w").GetTensor().data<float>()[0], static_cast<float>(s.step));
    return {s.step, logged.text()};
  }

  CheckpointManager ckpt{tmp / "ckpt"};
};

// Issue 32, finding 4: every MANIFEST entry had the same CRC (it covered the
// file with its own CRC trailer), so a tensor file copied in from another
// step loaded without error.
TEST_F(CheckpointTamperTest, ATensorFileFromAnotherStepIsRefusedAndResumeFallsBack) {
  fs::copy_file(ckpt.StepDir(10) + "/w.tensor", ckpt.StepDir(20) + "/w.tensor",
                fs::copy_options::overwrite_existing);
  const std::string why = ckpt.Verify(20);
  EXPECT_NE(why.find("w.tensor' of variable 'w' fails its CRC32C checksum against its MANIFEST"),
            std::string::npos) << why;
  EXPECT_EQ(ckpt.LatestStep(), 10);
  Scope fresh;
  EXPECT_THROW(ckpt.Load(program, fresh, 20), Corruption);
  const auto [step, logged] = Resume();
  EXPECT_EQ(step, 10);
  EXPECT_NE(logged.find("checkpoint " + ckpt.StepDir(20) + " is skipped: "), std::string::npos)
      << logged;
}

// Issue 32, finding 4: STATE.json was not checksummed; an edited step
// number was accepted.
TEST_F(CheckpointTamperTest, AnEditedStateIsRefusedAndResumeFallsBack) {
  const std::string path = ckpt.StepDir(20) + "/STATE.json";
  std::string text = ReadFile(path);
  const size_t at = text.find("\"step\": 20");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 10, "\"step\": 25");
  WriteFileAtomic(path, text);
  EXPECT_NE(ckpt.Verify(20).find("fails its CRC32C checksum (edited or corrupt)"),
            std::string::npos) << ckpt.Verify(20);
  const auto [step, logged] = Resume();
  EXPECT_EQ(step, 10);
  EXPECT_NE(logged.find(ckpt.StepDir(20) + " is skipped"), std::string::npos) << logged;
}

// Issue 32, finding 4: a step directory without STATE.json was skipped
// silently, and the job resumed from an older step.
TEST_F(CheckpointTamperTest, AMissingStateIsNamedInAWarningAndResumeFallsBack) {
  fs::remove(ckpt.StepDir(20) + "/STATE.json");
  const auto [step, logged] = Resume();
  EXPECT_EQ(step, 10);
  EXPECT_NE(logged.find("checkpoint " + ckpt.StepDir(20) + " is skipped: "), std::string::npos)
      << logged;
  EXPECT_NE(logged.find("has no STATE.json"), std::string::npos) << logged;
  Fill(30);
  ckpt.Save(program, scope, {30});
  EXPECT_TRUE(FileExists(ckpt.StepDir(20) + "/MANIFEST")) << "kept for the user to look at";
}

// A MANIFEST swapped in from another step (with its files) does not match
// the STATE.json beside it.
TEST_F(CheckpointTamperTest, AStepMixedFromTwoSavesIsRefused) {
  for (const auto& e : fs::directory_iterator(ckpt.StepDir(10))) {
    if (e.path().filename() == "STATE.json") continue;
    fs::copy_file(e.path(), ckpt.StepDir(20) + "/" + e.path().filename().string(),
                  fs::copy_options::overwrite_existing);
  }
  EXPECT_NE(ckpt.Verify(20).find("is not the one its training state was saved with"),
            std::string::npos) << ckpt.Verify(20);
  EXPECT_EQ(ckpt.LatestStep(), 10);
}

TEST_F(CheckpointManagerTest, ALinkedOrOpenCheckpointDirectoryIsRefused) {
  MakeDirs(tmp / "real");
  fs::create_directory_symlink(tmp / "real", tmp / "linked");
  Fill(1);
  try {
    CheckpointManager(tmp / "linked").Save(program, scope, {1});
    ADD_FAILURE() << "saved through a link";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("is refused: it is a symbolic link"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(fs::is_empty(tmp / "real"));
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
