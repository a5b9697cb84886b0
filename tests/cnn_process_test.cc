// Seed 001's image-classification command as real processes:
//   flotilla launch --nproc_per_node 2 train_with_fleet --model=ResNet50 --data_dir=<digits>
// on the handwritten-digits ImageNet-layout set that
// scripts/make_digits_imagenet.sh writes (real JPEGs), and its refusals.
#include <gtest/gtest.h>

#include <cstdlib>

#include "launch_test_util.h"

namespace flotilla {
namespace {

using launch_test::Child;
using launch_test::TempDir;

constexpr auto kTimeout = std::chrono::seconds(200);

std::string TrainBin() { return launch_test::BuildDir() + "/bin/train_with_fleet"; }

class CnnProcesses : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    data_ = new TempDir();
    const std::string make = std::string(std::getenv("FLOTILLA_SOURCE_DIR")) + "/scripts/make_digits_imagenet.sh";
    ASSERT_EQ(std::system((make + " " + Digits() + " --size 32 >/dev/null").c_str()), 0)
        << "scripts/make_digits_imagenet.sh failed (needs python3-sklearn and libturbojpeg0)";
  }
  static void TearDownTestSuite() {
    delete data_;
    data_ = nullptr;
  }
  static std::string Digits() { return (*data_) / "digits"; }
  static TempDir* data_;
};

TempDir* CnnProcesses::data_ = nullptr;

TEST_F(CnnProcesses, ResNet50UnderFlotillaLaunchWithTwoRanks) {
  TempDir tmp;
  Child job({launch_test::FlotillaBin(), "launch", "--nproc_per_node", "2", "--log_dir", tmp / "log", TrainBin(),
             "--model=ResNet50", "--data_dir=" + Digits(), "--image_size", "32", "--batch_size", "4",
             "--max_iter", "3", "--print_step", "1", "--lr", "0.01", "--nccl_comm_num", "2", "--fuse", "true",
             "--use_hierarchical_allreduce", "false", "--label_smoothing_epsilon", "0.1"},
            tmp.path());
  ASSERT_EQ(job.WaitCode(kTimeout), 0) << job.Stdout() << job.Stderr();
  const std::string out = launch_test::ReadText(tmp / "log/workerlog.0");
  for (const char* expected : {"ResNet50 on 1442 images, 10 classes, 2 rank(s) x batch 4",
                               "epoch 0 step 3: loss", "top1", "top5", "images/s",
                               "epoch 0 validation: loss", "(355 images)", "\"ranks\":2"}) {
    EXPECT_NE(out.find(expected), std::string::npos) << "missing '" << expected << "' in:\n" << out;
  }
}

TEST_F(CnnProcesses, LocalSgdAndSyncBatchNormFlagsRun) {
  TempDir tmp;
  Child job({TrainBin(), "--model=ResNet18", "--data_dir=" + Digits(), "--image_size", "32", "--batch_size", "8",
             "--max_iter", "2", "--use_local_sgd", "true", "--sync_bn", "true", "--validate", "false",
             "--lr_strategy", "cosine_decay", "--warm_up_epochs", "1"},
            tmp.path());
  ASSERT_EQ(job.WaitCode(kTimeout), 0) << job.Stdout() << job.Stderr();
  EXPECT_NE(job.Stdout().find("\"model\":\"ResNet18\""), std::string::npos) << job.Stdout();
}

TEST_F(CnnProcesses, Fp16IsRefusedClearlyOnCpu) {
  TempDir tmp;
  Child job({TrainBin(), "--model=ResNet50", "--data_dir=" + Digits(), "--fp16"}, tmp.path());
  EXPECT_EQ(job.WaitCode(kTimeout), 1);
  EXPECT_NE(job.Stderr().find("--fp16: float16 training needs a GPU"), std::string::npos) << job.Stderr();
}

TEST_F(CnnProcesses, MissingDataDirAndUnknownModelAreNamed) {
  TempDir tmp;
  Child nodir({TrainBin(), "--model=ResNet50", "--data_dir=" + tmp / "nowhere"}, tmp.path());
  EXPECT_EQ(nodir.WaitCode(kTimeout), 1);
  EXPECT_NE(nodir.Stderr().find("nowhere/train_list.txt"), std::string::npos) << nodir.Stderr();
  Child vgg({TrainBin(), "--model=VGG16", "--data_dir=" + Digits()}, tmp.path());
  EXPECT_EQ(vgg.WaitCode(kTimeout), 1);
  EXPECT_NE(vgg.Stderr().find("unknown model 'VGG16'"), std::string::npos) << vgg.Stderr();
}

}  // namespace
}  // namespace flotilla
