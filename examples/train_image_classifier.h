// The image-classification half of train_with_fleet: Paddle's fleet example
// `train_with_fleet.py --model=ResNet50 --data_dir=./ImageNet`, the job of
// Paddle's image-classification train.py, data-parallel under fleet.
#pragma once

#include <string>

#include "flotilla/fleet/role_maker.h"

namespace flotilla::examples {

struct ImageClassifierFlags {
  std::string model = "ResNet50";   // ResNet18|34|50|101|152 or LeNet
  std::string data_dir;             // train_list.txt, val_list.txt, images
  int batch_size = 32;              // per rank
  int num_epochs = 1;
  float lr = 0.1f;
  std::string lr_strategy = "piecewise_decay";  // piecewise_decay|cosine_decay|constant
  int warm_up_epochs = 0;
  float momentum_rate = 0.9f;
  float l2_decay = 1e-4f;
  float label_smoothing_epsilon = 0.0f;  // > 0: one_hot + label_smooth
  int image_size = 224;
  int resize_short_size = 0;       // 0: image_size * 256 / 224 (256 for 224)
  double lower_scale = 0.08;
  bool random_flip = true;
  int class_dim = 0;                // 0: from the data
  int print_step = 10;
  int max_iter = 0;                 // > 0: steps per epoch at most
  int reader_thread = 2;
  int random_seed = 0;
  bool validate = true;
  bool fp16 = false;
  // Strategy flags shared with the mlp job.
  int nccl_comm_num = 1;
  bool fuse = true;
  int fuse_mb = 32;
  bool use_hierarchical_allreduce = false;
  bool use_local_sgd = false;
  int local_sgd_steps = 2;
  bool sync_bn = false;
  std::string backend = "auto";
  std::string model_dir;
};

// Joins fleet as `role`, trains, printing per-interval loss, top-1/top-5
// and images/s on rank 0, validation at each epoch's end, and a final JSON
// line. Returns 0; throws on bad flags or data.
int TrainImageClassifier(const ImageClassifierFlags& flags, const fleet::RoleMaker& role);

}  // namespace flotilla::examples
