#include "flotilla/fleet/checkpoint.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "flotilla/common/file_util.h"

namespace flotilla::fleet {
namespace {

class FleetCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/flotilla_fleet_ckpt_XXXXXX";
    dir_ = mkdtemp(pattern);
    VarDesc& v = program_.global_block().CreateVar("w");
    v.shape = {2};
    v.dtype = DType::kFloat32;
    v.persistable = true;
    fleet_.init(UserDefinedRoleMaker(0, Role::kWorker, 1));
    options_.main = &program_;
    options_.scope = &scope_;
  }
  void TearDown() override { RemoveAll(dir_); }

  void SetW(float value) {
    *scope_.Var("w")->GetMutableTensor() = Tensor::FromVector<float>({value, 0}, {2});
  }

  std::string dir_;
  Program program_;
  Scope scope_;
  Fleet fleet_;
  Executor exe_{CPUPlace()};
  CheckpointOptions options_;
};

TEST_F(FleetCheckpointTest, NothingToResumeFromReturnsNullopt) {
  EXPECT_FALSE(load_checkpoint(fleet_, exe_, dir_ + "/empty", options_).has_value());
}

TEST_F(FleetCheckpointTest, ResumesTheNewestStepAndKeepsK) {
  options_.keep = 2;
  for (int64_t step : {5, 10, 15}) {
    SetW(static_cast<float>(step));
    io::TrainingState state;
    state.rng_seed = 7;
    save_checkpoint(fleet_, exe_, dir_, step, state, options_);
  }
  EXPECT_EQ(io::CheckpointManager(dir_).Steps(), (std::vector<int64_t>{10, 15}));
  SetW(-1);
  auto state = load_checkpoint(fleet_, exe_, dir_, options_);
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->step, 15);
  EXPECT_EQ(state->rng_seed, 7u);
  EXPECT_EQ(scope_.GetVar("w").GetTensor().data<float>()[0], 15.0f);
}

}  // namespace
}  // namespace flotilla::fleet
