#include "flotilla/io/checkpoint.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"
#include "flotilla/common/safe_file.h"
#include "io/checkpoint_dir.h"
#include "io/manifest.h"
#include "io/testing/temp_dir.h"

namespace flotilla::io {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

void AddVar(Program& p, const std::string& name, Dims shape, DType dtype, bool persistable,
            VarType type = VarType::kDenseTensor) {
  VarDesc& v = p.global_block().CreateVar(name);
  v.shape = std::move(shape);
  v.dtype = dtype;
  v.persistable = persistable;
  v.type = type;
}

void ExpectContains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddVar(program, "fc_0.w_0", {3, 2}, DType::kFloat32, true);
    AddVar(program, "fc_0.b_0", {2}, DType::kFloat32, true);
    AddVar(program, "@step@", {1}, DType::kInt64, true);
    AddVar(program, "x", {-1, 3}, DType::kFloat32, false);
    AddVar(program, "reader", {}, DType::kFloat32, true, VarType::kRaw);
    AddVar(program, "feed", {}, DType::kFloat32, true);
    Fill(scope, 1.0f);
  }

  // Values differ per `base` so checkpoints can be told apart.
  void Fill(Scope& s, float base) {
    *s.Var("fc_0.w_0")->GetMutableTensor() =
        Tensor::FromVector<float>({base, 2, 3, 4, 5, 6}, {3, 2});
    *s.Var("fc_0.b_0")->GetMutableTensor() = Tensor::FromVector<float>({-base, 0.5f}, {2});
    *s.Var("@step@")->GetMutableTensor() = Tensor::FromVector<int64_t>({int64_t(base) * 7}, {1});
  }

  float LoadedW0(const std::string& dir) {
    Scope fresh;
    LoadPersistables(dir, program, fresh);
    return fresh.GetVar("fc_0.w_0").GetTensor().data<float>()[0];
  }

  std::string LoadError(const std::string& dir, const Program& p) {
    Scope fresh;
    try {
      LoadPersistables(dir, p, fresh);
    } catch (const Error& e) {
      return StrCat(ErrorCodeName(e.code()), ": ", e.what());
    }
    return "no error";
  }

  Program program;
  Scope scope;
  TempDir tmp;
};

TEST_F(CheckpointTest, SavesEveryPersistableDenseTensorAndLoadsThemBack) {
  EXPECT_EQ(PersistableNames(program), (std::vector<std::string>{"@step@", "fc_0.b_0", "fc_0.w_0"}));
  const std::string dir = tmp / "ckpt";
  Executor exe;
  SavePersistables(exe, dir, program, scope);
  auto manifest = ReadManifest(dir);
  ASSERT_EQ(manifest.size(), 3u);
  EXPECT_EQ(manifest[2].name, "fc_0.w_0");
  EXPECT_EQ(manifest[2].dims, (Dims{3, 2}));
  EXPECT_EQ(manifest[0].dtype, DType::kInt64);

  Scope fresh;
  LoadPersistables(exe, dir, program, fresh);
  for (const auto& name : PersistableNames(program)) {
    const Tensor& a = scope.GetVar(name).GetTensor();
    const Tensor& b = fresh.GetVar(name).GetTensor();
    ASSERT_EQ(a.dims(), b.dims()) << name;
    ASSERT_EQ(a.dtype(), b.dtype()) << name;
    EXPECT_EQ(0, std::memcmp(a.raw_data(), b.raw_data(), a.nbytes())) << name;
  }
  EXPECT_EQ(fresh.FindVar("x"), nullptr);
}

TEST_F(CheckpointTest, SaveVarsAndLoadVarsTakeExplicitNames) {
  const std::string dir = tmp / "vars";
  SaveVars(dir, {"fc_0.b_0"}, scope);
  Scope fresh;
  LoadVars(dir, {"fc_0.b_0"}, fresh);
  EXPECT_EQ(fresh.GetVar("fc_0.b_0").GetTensor().ToVector<float>(), (std::vector<float>{-1, 0.5f}));
  EXPECT_THROW(LoadVars(dir, {"fc_0.w_0"}, fresh), NotFound);
  EXPECT_THROW(SaveVars(tmp / "nope", {"missing"}, scope), NotFound);
}

TEST_F(CheckpointTest, ATruncatedTensorFileIsCorruptionNamingFileAndVariable) {
  const std::string dir = tmp / "ckpt";
  SavePersistables(dir, program, scope);
  const std::string file = dir + "/fc_0.w_0.tensor";
  fs::resize_file(file, fs::file_size(file) - 5);
  std::string msg = LoadError(dir, program);
  ExpectContains(msg, "Corruption");
  ExpectContains(msg, file);
  ExpectContains(msg, "variable 'fc_0.w_0'");
}

TEST_F(CheckpointTest, AFlippedByteIsCorruptionNamingFileAndVariable) {
  const std::string dir = tmp / "ckpt";
  SavePersistables(dir, program, scope);
  const std::string file = dir + "/fc_0.b_0.tensor";
  std::string bytes = ReadFile(file);
  bytes[bytes.size() / 2] ^= 0x10;
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  std::string msg = LoadError(dir, program);
  ExpectContains(msg, "Corruption");
  ExpectContains(msg, file);
  ExpectContains(msg, "variable 'fc_0.b_0'");
  ExpectContains(msg, "checksum");
}

TEST_F(CheckpointTest, ADamagedManifestIsCorruption) {
  const std::string dir = tmp / "ckpt";
  SavePersistables(dir, program, scope);
  std::string manifest = ReadFile(dir + "/MANIFEST");
  manifest[30] = manifest[30] == '1' ? '2' : '1';
  std::ofstream(dir + "/MANIFEST", std::ios::trunc) << manifest;
  std::string msg = LoadError(dir, program);
  ExpectContains(msg, "Corruption");
  ExpectContains(msg, dir + "/MANIFEST");
  std::ofstream(dir + "/MANIFEST", std::ios::trunc) << manifest.substr(0, 40);
  ExpectContains(LoadError(dir, program), "truncated");
  ExpectContains(LoadError(tmp / "absent", program), "NotFound");
}

TEST_F(CheckpointTest, MissingVariablesAndShapeMismatchesAreNamed) {
  const std::string dir = tmp / "ckpt";
  SavePersistables(dir, program, scope);

  Program more = program.Clone();
  AddVar(more, "fc_1.w_0", {2, 2}, DType::kFloat32, true);
  std::string msg = LoadError(dir, more);
  ExpectContains(msg, "NotFound");
  ExpectContains(msg, "'fc_1.w_0' is not in checkpoint");

  Program reshaped = program.Clone();
  reshaped.global_block().Var("fc_0.w_0").shape = {4, 2};
  msg = LoadError(dir, reshaped);
  ExpectContains(msg, "InvalidArgument");
  ExpectContains(msg, "'fc_0.w_0'");
  ExpectContains(msg, "program expects float32 [4, 2]");

  Program retyped = program.Clone();
  retyped.global_block().Var("@step@").dtype = DType::kInt32;
  ExpectContains(LoadError(dir, retyped), "InvalidArgument");
}

TEST_F(CheckpointTest, AFailedSaveLeavesTheOldCheckpointIntact) {
  const std::string dir = tmp / "ckpt";
  SavePersistables(dir, program, scope);
  Scope newer;
  Fill(newer, 9.0f);
  // "zz" sorts last: the other tensors are written before the save fails.
  Program broken = program.Clone();
  AddVar(broken, "zz_not_initialised", {1}, DType::kFloat32, true);
  EXPECT_THROW(SavePersistables(dir, broken, newer), NotFound);
  EXPECT_EQ(LoadedW0(dir), 1.0f);
  for (const auto& entry : fs::directory_iterator(tmp.path())) {
    EXPECT_EQ(entry.path().filename(), "ckpt") << "left behind: " << entry.path();
  }
  SavePersistables(dir, program, newer);  // a good save replaces it
  EXPECT_EQ(LoadedW0(dir), 9.0f);
}

// A parameter server may still be writing its tables into a failed save's
// temporary directory (the trainer's call was cancelled, the server's work
// was not): the failed save still leaves nothing behind. The writer here
// works as a server does, through the descriptor of the directory it
// opened (SafeDir::ProcPath), and keeps going until a write fails.
TEST_F(CheckpointTest, AFailedSaveLeavesNothingWhileAnotherWriterGoesOn) {
  std::thread writer;
  std::atomic<int> written{0};
  EXPECT_THROW(internal::CommitDirAtomic(tmp / "ckpt", [&](const std::string& dir) {
    MakeDirs(dir + "/ps_tables");
    auto tables = std::make_shared<SafeDir>(SafeDir::Open(dir + "/ps_tables", "tables"));
    writer = std::thread([tables, &written] {
      try {
        for (int i = 0; i < 100000; ++i, ++written) {
          WriteFileAtomic(tables->ProcPath() + "/t" + std::to_string(i % 50), "rows");
        }
      } catch (const Error&) {
        // the directory is gone: nothing can be created in it
      }
    });
    while (written < 20) std::this_thread::yield();
    FLOTILLA_THROW(Unavailable, "No space left on device");
  }), Unavailable);
  writer.join();
  EXPECT_GE(written.load(), 20);
  EXPECT_TRUE(fs::is_empty(tmp.path())) << "left behind: " << fs::directory_iterator(tmp.path())->path();
}

TEST_F(CheckpointTest, AnUnwritableTargetFailsWithoutTouchingTheOldCheckpoint) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  const std::string parent = tmp / "locked";
  const std::string dir = parent + "/ckpt";
  SavePersistables(dir, program, scope);
  ASSERT_EQ(::chmod(parent.c_str(), 0555), 0);
  Scope newer;
  Fill(newer, 9.0f);
  EXPECT_THROW(SavePersistables(dir, program, newer), Unavailable);
  ::chmod(parent.c_str(), 0755);
  EXPECT_EQ(LoadedW0(dir), 1.0f);
}

// Rewrites dir's MANIFEST so that its first entry names `file`.
void PointFirstEntryAt(const std::string& dir, const std::string& file) {
  std::vector<ManifestEntry> entries = ReadManifest(dir);
  entries.at(0).file = file;
  WriteFileAtomic(dir + "/" + internal::kManifestName, internal::FormatManifest(entries));
}

TEST_F(CheckpointTest, ManifestFilesOutsideTheCheckpointAreRefused) {
  const std::string dir = tmp / "ckpt";
  SavePersistables(dir, program, scope);
  const std::string entry_file = ReadManifest(dir)[0].file;
  // A valid tensor file beside the checkpoint, reachable by ".." or by an
  // absolute path: a manifest must not lead the loader there.
  fs::copy_file(dir + "/" + entry_file, tmp / "outside.tensor");
  for (const std::string& file : {std::string("../outside.tensor"), tmp / "outside.tensor",
                                  std::string("sub/../../outside.tensor"), std::string("..")}) {
    SavePersistables(dir, program, scope);
    PointFirstEntryAt(dir, file);
    const std::string error = LoadError(dir, program);
    EXPECT_NE(error.find("Corruption"), std::string::npos) << file << ": " << error;
    EXPECT_NE(error.find("MANIFEST"), std::string::npos) << file << ": " << error;
  }
}

// Peak resident memory of a child that runs `fn`, in MiB above its start.
long ChildPeakGrowthMiB(const std::function<void()>& fn) {
  pid_t pid = fork();
  if (pid == 0) {
    rusage before{};
    getrusage(RUSAGE_SELF, &before);
    try {
      fn();
    } catch (...) {
    }
    rusage after{};
    getrusage(RUSAGE_SELF, &after);
    _exit(static_cast<int>(std::min<long>((after.ru_maxrss - before.ru_maxrss) / 1024, 250)));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 255;
}

TEST_F(CheckpointTest, AFileLargerThanItsManifestSaysIsRefusedBeforeItIsRead) {
  const std::string dir = tmp / "ckpt";
  SavePersistables(dir, program, scope);
  const std::string path = dir + "/" + ReadManifest(dir)[0].file;
  fs::resize_file(path, 256u << 20);  // sparse: no disk used
  const std::string error = LoadError(dir, program);
  EXPECT_NE(error.find("Corruption"), std::string::npos) << error;
  // Reading the 256 MiB to find out would show in the peak memory.
  EXPECT_LT(ChildPeakGrowthMiB([&] { LoadError(dir, program); }), 32);
}


TEST(TensorFileTest, RoundTripsEveryDTypeAndEdgeShape) {
  TempDir tmp;
  std::vector<Tensor> tensors = {
      Tensor::FromVector<float>({1.5f, -2}, {2}),
      Tensor::FromVector<double>({1, 2, 3, 4, 5, 6}, {2, 1, 3}),
      Tensor::FromVector<int32_t>({-7}, {}),
      Tensor::FromVector<int64_t>({}, {0, 4}),
  };
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string path = tmp / ("t" + std::to_string(i));
    SaveTensor(path, tensors[i]);
    Tensor back = LoadTensor(path);
    EXPECT_EQ(back.dims(), tensors[i].dims());
    EXPECT_EQ(back.dtype(), tensors[i].dtype());
    if (back.nbytes() > 0) {
      EXPECT_EQ(0, std::memcmp(back.raw_data(), tensors[i].raw_data(), back.nbytes()));
    }
  }
  EXPECT_THROW(LoadTensor(tmp / "missing"), NotFound);
  const std::string path = tmp / "t1";
  fs::resize_file(path, 10);
  try {
    LoadTensor(path);
    FAIL();
  } catch (const Corruption& e) {
    ExpectContains(e.what(), path);
  }
}

TEST(TensorFileTest, KeepsSequenceOffsets) {
  TempDir tmp;
  Tensor t = Tensor::FromVector<int64_t>({4, 5, 6}, {3, 1});
  t.set_lod({{0, 1, 1, 3}});
  const std::string path = tmp / "ids";
  SaveTensor(path, t);
  Tensor back = LoadTensor(path);
  EXPECT_EQ(back.lod(), t.lod());
  EXPECT_EQ(back.ToVector<int64_t>(), t.ToVector<int64_t>());
  // Offsets that do not describe the rows are refused, naming the file.
  t.set_lod({{0, 1, 4}});
  SaveTensor(path, t);
  try {
    LoadTensor(path);
    FAIL() << "a LoD ending past the rows was accepted";
  } catch (const Corruption& e) {
    ExpectContains(e.what(), "invalid LoD");
  }
  // A tensor without offsets keeps the version 1 bytes.
  SaveTensor(path, Tensor::FromVector<float>({1}, {1}));
  EXPECT_FALSE(LoadTensor(path).has_lod());
}

}  // namespace
}  // namespace flotilla::io
