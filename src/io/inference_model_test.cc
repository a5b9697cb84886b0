#include "flotilla/io/inference_model.h"

#include <gtest/gtest.h>

#include <fstream>

#include "flotilla/common/file_util.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/io/checkpoint.h"
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
