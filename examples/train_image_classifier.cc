#include "train_image_classifier.h"

#include <sys/resource.h>

#include <chrono>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "flotilla/api/layers.h"
#include "flotilla/api/learning_rate_scheduler.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/fleet/fleet.h"
#include "flotilla/framework/executor.h"
#include "flotilla/io/datasets/imagenet.h"
#include "flotilla/models/resnet.h"

namespace flotilla::examples {
namespace {

struct Net {
  Variable image, label, loss, acc1, acc5;
};

Variable Logits(const ImageClassifierFlags& f, const Variable& image, int classes) {
  if (f.model == "LeNet") return models::LeNet(image, classes);
  return models::ResNet(image, models::ResNetDepth(f.model), classes);
}

Net BuildNet(const ImageClassifierFlags& f, int classes) {
  Net n;
  n.image = layers::data("image", {3, f.image_size, f.image_size});
  n.label = layers::data("label", {1}, DType::kInt64);
  Variable logits = Logits(f, n.image, classes);
  Variable cost;
  if (f.label_smoothing_epsilon > 0) {
    Variable soft = layers::label_smooth(layers::one_hot(n.label, classes), f.label_smoothing_epsilon);
    cost = layers::softmax_with_cross_entropy(logits, soft, /*soft_label=*/true);
  } else {
    cost = layers::softmax_with_cross_entropy(logits, n.label);
  }
  n.loss = layers::mean(cost);
  Variable prob = layers::softmax(logits);
  n.acc1 = layers::accuracy(prob, n.label, 1);
  n.acc5 = layers::accuracy(prob, n.label, std::min(5, classes));
  return n;
}

// The learning rate of Paddle's ResNet training recipe: piecewise decay by 10x
// at 30/60/90 epochs, or cosine over the run; optional linear warmup.
optimizer::LearningRate Schedule(const ImageClassifierFlags& f, int64_t steps_per_epoch) {
  optimizer::LearningRate lr = f.lr;
  if (f.lr_strategy == "piecewise_decay") {
    std::vector<int64_t> bounds;
    std::vector<float> values{f.lr};
    for (int e : {30, 60, 90}) {
      bounds.push_back(int64_t(e) * steps_per_epoch);
      values.push_back(values.back() * 0.1f);
    }
    lr = layers::piecewise_decay(bounds, values);
  } else if (f.lr_strategy == "cosine_decay") {
    lr = layers::cosine_decay(f.lr, steps_per_epoch, f.num_epochs);
  } else {
    FLOTILLA_CHECK(f.lr_strategy == "constant", InvalidArgument, "--lr_strategy must be piecewise_decay, ",
                   "cosine_decay or constant, not '", f.lr_strategy, "'");
  }
  if (f.warm_up_epochs <= 0) return lr;
  const int64_t warm = int64_t(f.warm_up_epochs) * steps_per_epoch;
  return lr.scheduled() ? layers::linear_lr_warmup(lr.var(), warm, 0.0f, f.lr)
                        : layers::linear_lr_warmup(f.lr, warm, 0.0f, f.lr);
}

fleet::DistributedStrategy Strategy(const ImageClassifierFlags& f) {
  fleet::DistributedStrategy s;
  s.set_nccl_comm_num(f.nccl_comm_num);
  s.set_fuse_all_reduce_ops(f.fuse);
  s.set_fuse_grad_size_in_MB(f.fuse_mb);
  s.set_use_hierarchical_allreduce(f.use_hierarchical_allreduce);
  s.set_sync_batch_norm(f.sync_bn);
  if (f.use_local_sgd) {
    s.set_localsgd(true);
    s.Set("localsgd_configs.k_steps", f.local_sgd_steps);
  }
  return s;
}

io::ImageNetOptions ReaderOptions(const ImageClassifierFlags& f, bool train) {
  io::ImageNetOptions o;
  o.data_dir = f.data_dir;
  o.list = train ? "train_list.txt" : "val_list.txt";
  o.train = train;
  o.shuffle = train;
  o.image_size = f.image_size;
  const int short_side = f.resize_short_size > 0 ? f.resize_short_size : (f.image_size * 256 + 112) / 224;
  o.resize_short = std::max(short_side, f.image_size);
  o.lower_scale = f.lower_scale;
  o.flip = f.random_flip;
  o.batch_size = f.batch_size;
  o.num_workers = f.reader_thread;
  o.rank = fleet::worker_index();
  o.nranks = fleet::worker_num();
  o.seed = static_cast<uint64_t>(f.random_seed);
  o.drop_last = train;
  o.even_shards = train;
  return o;
}

FeedMap Feed(const io::ImageBatch& b) { return {{"image", b.image}, {"label", b.label}}; }

float Scalar(const Tensor& t) { return t.data<float>()[0]; }

// Sums over every rank (when there are several): [loss, top1, top5, images].
std::vector<double> AllRanks(std::vector<double> v) {
  if (auto group = fleet::default_fleet().process_group()) {
    group->allreduce(v.data(), v.size(), DType::kFloat64, comm::ReduceOp::kSum);
  }
  return v;
}

std::vector<double> Validate(Executor& exe, const Program& test, const Net& n, io::ImageNetReader& val) {
  std::vector<double> sums(4, 0.0);
  val.StartEpoch(0);
  while (auto b = val.Next()) {
    auto out = exe.Run(test, Feed(*b), {n.loss.name(), n.acc1.name(), n.acc5.name()});
    const double k = double(b->image.dims()[0]);
    for (int i = 0; i < 3; ++i) sums[i] += Scalar(out[i]) * k;
    sums[3] += k;
  }
  return AllRanks(sums);
}

// CPU seconds this process has used (every thread, the reader's included).
double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

class Printer {
 public:
  explicit Printer(bool on) : on_(on) {}
  template <typename... Args>
  void Line(const Args&... args) const {
    if (!on_) return;
    ((std::cout << args), ...);
    std::cout << std::endl;
  }

 private:
  bool on_;
};

}  // namespace

int TrainImageClassifier(const ImageClassifierFlags& f, const fleet::RoleMaker& role) {
  FLOTILLA_CHECK(!f.fp16, Unimplemented,
                 "--fp16: float16 training needs a GPU; this Flotilla build trains on the CPU in float32 "
                 "(drop --fp16)");
  FLOTILLA_CHECK(!f.data_dir.empty(), InvalidArgument, "--model ", f.model,
                 " needs --data_dir (train_list.txt, val_list.txt and the images)");
  fleet::FleetOptions options;
  options.backend = f.backend;
  fleet::init(role, options);
  io::ImageNetReader train(ReaderOptions(f, true));
  const int classes = f.class_dim > 0 ? f.class_dim : train.num_classes();
  int64_t steps = train.batches_per_epoch();
  if (f.max_iter > 0) steps = std::min<int64_t>(steps, f.max_iter);
  FLOTILLA_CHECK(steps > 0, InvalidArgument, "--data_dir ", f.data_dir, ": ", train.size(),
                 " training images give no full batch of ", f.batch_size, " per rank");

  Program main, startup;
  if (f.random_seed != 0) startup.set_random_seed(static_cast<uint64_t>(f.random_seed));
  ProgramGuard guard(main, startup);
  Net net = BuildNet(f, classes);
  Program test = main.Clone(/*for_test=*/true);
  optimizer::Momentum momentum(Schedule(f, steps), f.momentum_rate, false,
                               regularizer::L2Decay(f.l2_decay));
  auto opt = fleet::distributed_optimizer(momentum, Strategy(f));
  opt.minimize(net.loss, &startup);

  Executor exe(CPUPlace());
  exe.Run(fleet::startup_program());
  const int rank = fleet::worker_index(), ranks = fleet::worker_num();
  Printer print(rank == 0);
  print.Line("train_with_fleet: ", f.model, " on ", train.size(), " images, ", classes, " classes, ",
             ranks, " rank(s) x batch ", f.batch_size, ", ", steps, " steps/epoch");
  std::unique_ptr<io::ImageNetReader> val;
  if (f.validate) val = std::make_unique<io::ImageNetReader>(ReaderOptions(f, false));
  nlohmann::json last;
  double total_images = 0, total_secs = 0, cpu_secs = 0;
  int64_t total_steps = 0;
  const std::vector<std::string> fetch{net.loss.name(), net.acc1.name(), net.acc5.name(),
                                       momentum.learning_rate_var().name()};
  for (int epoch = 0; epoch < f.num_epochs; ++epoch) {
    train.StartEpoch(epoch);
    auto start = std::chrono::steady_clock::now();
    const double cpu_start = CpuSeconds();
    int64_t images = 0;
    for (int64_t step = 0; step < steps; ++step) {
      auto batch = train.Next();
      if (!batch) break;
      auto out = exe.Run(fleet::main_program(), Feed(*batch), fetch);
      images += batch->image.dims()[0];
      ++total_steps;
      if ((step + 1) % f.print_step == 0 || step + 1 == steps) {
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        print.Line("epoch ", epoch, " step ", step + 1, ": loss ", std::fixed, std::setprecision(4),
                   Scalar(out[0]), " top1 ", Scalar(out[1]), " top5 ", Scalar(out[2]), " lr ",
                   std::setprecision(6), Scalar(out[3]), " images/s ", std::setprecision(1),
                   double(images) * ranks / secs);
        last["loss"] = Scalar(out[0]);
      }
    }
    total_images += double(images) * ranks;
    total_secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    cpu_secs += CpuSeconds() - cpu_start;
    if (val) {
      auto v = Validate(exe, test, net, *val);
      last["val_loss"] = v[0] / v[3], last["val_top1"] = v[1] / v[3], last["val_top5"] = v[2] / v[3];
      print.Line("epoch ", epoch, " validation: loss ", std::fixed, std::setprecision(4), v[0] / v[3],
                 " top1 ", v[1] / v[3], " top5 ", v[2] / v[3], " (", int64_t(v[3]), " images)");
    }
  }
  if (!f.model_dir.empty()) fleet::save_persistables(exe, f.model_dir);
  fleet::barrier_worker();
  last["model"] = f.model;
  last["ranks"] = ranks;
  last["epochs"] = f.num_epochs;
  last["images_per_sec"] = total_secs > 0 ? total_images / total_secs : 0.0;
  last["rank0_cpu_ms_per_step"] = total_steps > 0 ? 1e3 * cpu_secs / double(total_steps) : 0.0;
  print.Line(last.dump());
  return 0;
}

}  // namespace flotilla::examples
