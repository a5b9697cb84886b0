#include "flotilla/io/inference_model.h"

#include <gtest/gtest.h>

#include <fstream>

#include "flotilla/common/file_util.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/io/checkpoint.h"
#include "flotilla/io/paddle_tensors.h"
#include "io/testing/inference_helper.h"
#include "io/testing/temp_dir.h"

namespace flotilla::io {
namespace {

using testing::TempDir;
using testing::RunInferenceHelper;

// pred = x·w + b, plus a training tail (a loss over a label) that the
// inference model must not carry.
class InferenceModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RegisterAllOps();
    Block& g = main.global_block();
    Data("x", {-1, 4}, DType::kFloat32);
    Data("label", {-1, 3}, DType::kFloat32);
    Param("w", {4, 3});
    Param("b", {3});
    g.AppendOp(OpDesc("mul").In("X", {"x"}).In("Y", {"w"}).Out("Out", {"xw"}));
    g.AppendOp(OpDesc("elementwise_add").In("X", {"xw"}).In("Y", {"b"}).Out("Out", {"pred"})
                   .Set("axis", int32_t{1}));
    g.AppendOp(OpDesc("elementwise_sub").In("X", {"pred"}).In("Y", {"label"}).Out("Out", {"diff"}));
    std::vector<float> w(12), b{0.5f, -1.0f, 2.0f};
    for (int i = 0; i < 12; ++i) w[i] = 0.1f * float(i) - 0.45f;
    *scope.Var("w")->GetMutableTensor() = Tensor::FromVector<float>(w, {4, 3});
    *scope.Var("b")->GetMutableTensor() = Tensor::FromVector<float>(b, {3});
    x = Tensor::FromVector<float>({1, 2, 3, 4, -1, 0.5f, 0, 2}, {2, 4});
  }

  void Data(const std::string& name, Dims shape, DType dtype) {
    VarDesc& v = main.global_block().CreateVar(name);
    v.shape = std::move(shape);
    v.dtype = dtype;
    v.is_data = true;
    v.stop_gradient = true;
  }

  void Param(const std::string& name, Dims shape) {
    VarDesc& v = main.global_block().CreateVar(name);
    v.shape = std::move(shape);
    v.persistable = true;
    v.is_parameter = true;
  }

  std::vector<float> TrainingPrediction() {
    auto label = Tensor::FromVector<float>(std::vector<float>(6, 0.0f), {2, 3});
    return exe.Run(main, {{"x", x}, {"label", label}}, {"pred"}, &scope)[0].ToVector<float>();
  }

  Program main;
  Scope scope;
  Executor exe;
  Tensor x;
  TempDir tmp;
};

TEST_F(InferenceModelTest, SavedModelIsPrunedAndReloadsInProcess) {
  std::vector<float> expected = TrainingPrediction();
  const std::string dir = tmp / "model";
  SaveInferenceModel(dir, {"x"}, {"pred"}, exe, main, scope);

  Scope fresh;
  InferenceModel model = LoadInferenceModel(dir, fresh);
  EXPECT_EQ(model.feed_names, (std::vector<std::string>{"x"}));
  EXPECT_EQ(model.fetch_names, (std::vector<std::string>{"pred"}));
  EXPECT_FALSE(model.program.global_block().HasVar("label"));
  EXPECT_FALSE(model.program.global_block().HasVar("diff"));
  EXPECT_EQ(model.program.global_block().op_size(), 2u);
  Executor other;
  auto out = other.Run(model.program, {{"x", x}}, model.fetch_names, &fresh);
  EXPECT_EQ(out[0].ToVector<float>(), expected);
}

TEST_F(InferenceModelTest, AFreshProcessGivesTheTrainingProgramsPredictions) {
  std::vector<float> expected = TrainingPrediction();
  const std::string dir = tmp / "model";
  SaveInferenceModel(dir, {"x"}, {"pred"}, exe, main, scope);
  SaveTensor(tmp / "x.tensor", x);
  ASSERT_EQ(RunInferenceHelper(dir, tmp.path(), {tmp / "x.tensor"}), 0);
  Tensor out = LoadTensor(tmp / "fetch_0.tensor");
  EXPECT_EQ(out.dims(), (Dims{2, 3}));
  EXPECT_EQ(out.ToVector<float>(), expected);
}

TEST_F(InferenceModelTest, BadNamesAndDamagedFilesAreReported) {
  EXPECT_THROW(SaveInferenceModel(tmp / "m", {"x"}, {"nope"}, exe, main, scope), NotFound);
  EXPECT_THROW(SaveInferenceModel(tmp / "m", {"nope"}, {"pred"}, exe, main, scope), NotFound);
  EXPECT_THROW(SaveInferenceModel(tmp / "m", {"x"}, {}, exe, main, scope), InvalidArgument);
  Scope empty;
  EXPECT_THROW(SaveInferenceModel(tmp / "m", {"x"}, {"pred"}, exe, main, empty), NotFound);
  EXPECT_FALSE(FileExists(tmp / "m"));

  const std::string dir = tmp / "model";
  SaveInferenceModel(dir, {"x"}, {"pred"}, exe, main, scope);
  std::string model = ReadFile(dir + "/" + kModelFileName);
  model[model.size() / 2] ^= 0x01;
  std::ofstream(dir + "/" + kModelFileName, std::ios::binary | std::ios::trunc) << model;
  Scope fresh;
  try {
    LoadInferenceModel(dir, fresh);
    FAIL() << "expected Corruption";
  } catch (const Corruption& e) {
    EXPECT_NE(std::string(e.what()).find(kModelFileName), std::string::npos) << e.what();
  }
  EXPECT_THROW(LoadInferenceModel(tmp / "absent", fresh), NotFound);
}

}  // namespace
}  // namespace flotilla::io

namespace flotilla::io {
namespace {

// Paddle's layouts: combined parameters beside a named model file, one
// Paddle file per variable, the unpruned program and program_only.
TEST_F(InferenceModelTest, PaddleLayoutsRoundTripAndKeepOtherFiles) {
  std::vector<float> expected = TrainingPrediction();
  const std::string dir = tmp / "paddle";
  MakeDirs(dir);
  WriteFileAtomic(dir + "/other", "kept");
  SaveInferenceModel(dir, {"x"}, {"pred"}, exe, main, scope, {"m.pdmodel", "m.pdiparams"});
  SaveInferenceModel(dir, {"x"}, {"pred"}, exe, main, scope, {"split", ""});
  EXPECT_TRUE(FileExists(dir + "/other") && FileExists(dir + "/m.pdiparams") && FileExists(dir + "/w") &&
              FileExists(dir + "/b") && !FileExists(dir + "/split.feed_fetch"));
  for (const InferenceModelFiles& files : {InferenceModelFiles{"m.pdmodel", "m.pdiparams"},
                                           InferenceModelFiles{"split", ""}}) {
    Scope fresh;
    InferenceModel model = LoadInferenceModel(dir, fresh, files);
    Executor other;
    EXPECT_EQ(other.Run(model.program, {{"x", x}}, {"pred"}, &fresh)[0].ToVector<float>(), expected);
  }
  // The combined file is exactly w and b, sorted by name, in Paddle's format.
  std::vector<Tensor> both = DecodePaddleTensors(ReadFileAtMost(dir + "/m.pdiparams", 1 << 20, "p"), 2, "p");
  EXPECT_EQ(both[0].dims(), Dims({3}));
  EXPECT_EQ(both[1].dims(), Dims({4, 3}));

  SaveInferenceModel(dir, {}, {}, exe, main, scope, {"full", "", false, true});
  EXPECT_TRUE(FileExists(dir + "/full.main_program"));
  EXPECT_EQ(Program::Parse(ReadFileAtMost(dir + "/full.main_program", 1 << 20, "m")).global_block().op_size(), 3u);
  EXPECT_THROW(SaveInferenceModel(dir, {"x"}, {"pred"}, exe, main, scope, {"a/b", ""}), InvalidArgument);
  Scope fresh;
  EXPECT_THROW(LoadInferenceModel(dir, fresh, {"m.pdmodel", "absent"}), NotFound);
  // The model file names its targets: it loads from memory with its parameters.
  Scope mem;
  InferenceModel model = LoadInferenceModelFromMemory(ReadFileAtMost(dir + "/m.pdmodel", 1 << 20, "m"),
                                                      ReadFileAtMost(dir + "/m.pdiparams", 1 << 20, "p"), mem);
  EXPECT_EQ(model.feed_names, (std::vector<std::string>{"x"}));
  EXPECT_EQ(model.fetch_names, (std::vector<std::string>{"pred"}));
  EXPECT_EQ(exe.Run(model.program, {{"x", x}}, {"pred"}, &mem)[0].ToVector<float>(), expected);
  EXPECT_EQ(SerializeInferenceProgram(main, {"x"}, {"pred"}), ReadFileAtMost(dir + "/m.pdmodel", 1 << 20, "m"));
  EXPECT_THROW(LoadInferenceModelFromMemory(main.Serialize(), "", mem), Corruption);
}

}  // namespace
}  // namespace flotilla::io
