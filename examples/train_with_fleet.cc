// Paddle's fleet example train_with_fleet: the single-process mlp turned into a
// data-parallel job by four additions — the fleet headers, a role and a
// strategy, the distributed optimizer, and fleet's save.
//
//   build/bin/flotilla launch --devices 0,1 build/bin/train_with_fleet
//   mpirun -np 2 build/bin/train_with_fleet --role mpi
//   build/bin/train_with_fleet                 # one process
//
// The strategy carries the seed's tuning flags (comm_num 2, num_threads 3,
// num_iteration_per_drop_scope 30, fuse_all_reduce_ops) and its advice to
// fuse about a tenth of the gradients per all-reduce; the training loop
// fetches the loss every --fetch_frequency steps (2), as the seed's does.
// Each rank draws its own random batches (like gen_data(), seeded by rank).
// With --checkpoint_dir it saves a checkpoint every --checkpoint_every steps
// and, when restarted (an elastic job's new world), resumes from the newest
// one: the step counter continues and rank 0 prints "resumed at step N".
// --labels sum makes y learnable (sum(x[0..3]) > 2) so the loss shows progress.
// Under `flotilla launch --fault_tolerance step` (DistributedStrategy
// fault_tolerance "step") each step is a transaction (fleet::run_step): when a
// rank dies the survivors drop the step, re-form in-process and redo it in
// the smaller world. The data is then a deterministic stream of samples
// (sample i from seed i) dealt out by position, rank and world, so no sample
// is skipped or read twice; every rank prints a last line
// {"rank":…,"pid":…,"params_fnv":…,"faults":…,"steps_lost":…} to its log.
// Prints progress and, as its last line, {"loss":…, "samples_per_sec":…,
// "ranks":…} where samples_per_sec counts every rank's samples.
//
// With --model ResNet50 (ResNet18/34/101/152, LeNet) --data_dir DIR it runs
// the seed's image-classification job instead (train_image_classifier.cc):
//   flotilla launch --nproc_per_node 2 train_with_fleet --model=ResNet50 --data_dir=./ImageNet
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "example_main.h"
#include "train_image_classifier.h"
#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/common/env.h"
#include "flotilla/common/strings.h"
#include "flotilla/core/math.h"
#include "flotilla/fleet/checkpoint.h"
#include "flotilla/fleet/fleet.h"  // difference 1: the distributed training library
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"

using namespace flotilla;

namespace {

struct Flags {
  int steps = 100;
  int batch_size = 128;
  float lr = 0.01f;
  int hidden = 1280;
  // The seed's tuning flags.
  int comm_num = 2;
  int num_threads = 3;
  int num_iteration_per_drop_scope = 30;
  bool fuse = true;
  // Paddle's example: fuse about a tenth of the gradient volume per all-reduce (this
  // model has 6.6 MB of gradients).
  int fuse_mb = 1;
  int fetch_frequency = 2;
  int localsgd_k = 0;  // 0: plain all-reduce every step
  int warmup = 5;      // steps left out of samples_per_sec
  std::string role = "cloud";
  std::string backend = "auto";
  std::string strategy_file;
  std::string model_dir;
  std::string checkpoint_dir;
  int checkpoint_every = 10;
  std::string labels = "random";
  uint64_t seed = 0;  // 0: parameters initialised from a random seed
  bool profile = false;
};

// Per op type: total milliseconds, printed by --profile.
class OpProfile {
 public:
  void Attach(Executor& exe) {
    exe.set_op_observer([this](const OpDesc& op, int64_t start, int64_t end) {
      total_[op.type] += static_cast<double>(end - start) / 1e6;
    });
  }
  void Print(int steps) const {
    for (const auto& [type, ms] : total_) std::cerr << type << " " << ms / steps << " ms/step\n";
  }

 private:
  std::map<std::string, double> total_;
};

// CPU seconds this process has used (every thread).
double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

struct Model {
  Variable x, y, prediction, loss;
};

Model Mlp(int hidden) {
  Model m;
  m.x = layers::data("x", {32});
  m.y = layers::data("y", {1}, DType::kInt64);
  auto fc1 = layers::fc(m.x, hidden, 1, {}, {}, "tanh");
  auto fc2 = layers::fc(fc1, hidden, 1, {}, {}, "tanh");
  m.prediction = layers::fc(fc2, 2, 1, {}, {}, "softmax");
  m.loss = layers::mean(layers::cross_entropy(m.prediction, m.y));
  return m;
}

// gen_data(): x uniform in [0,1), y in {0,1} (random, or sum(x[0..3]) > 2).
class DataGen {
 public:
  DataGen(int batch, uint64_t seed, bool learnable)
      : batch_(batch), rng_(seed), learnable_(learnable) {}
  FeedMap Next() {
    std::vector<float> x(static_cast<size_t>(batch_) * 32);
    std::vector<int64_t> y(batch_);
    for (auto& v : x) v = uni_(rng_);
    for (int64_t i = 0; i < batch_; ++i) {
      float sum = 0;
      for (int j = 0; j < 4; ++j) sum += x[i * 32 + j];
      y[i] = learnable_ ? int64_t(sum > 2.0f) : static_cast<int64_t>(rng_() & 1);
    }
    return {{"x", Tensor::FromVector(x, {batch_, 32})}, {"y", Tensor::FromVector(y, {batch_, 1})}};
  }

 private:
  int64_t batch_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<float> uni_{0.0f, 1.0f};
  bool learnable_;
};

// The fault-tolerant job's data: sample i of the stream is drawn from seed
// i, so a batch depends only on where it starts.
FeedMap SamplesAt(int64_t first, int batch, bool learnable) {
  std::vector<float> x(static_cast<size_t>(batch) * 32);
  std::vector<int64_t> y(batch);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  for (int64_t i = 0; i < batch; ++i) {
    std::mt19937_64 rng(0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(first + i));
    float sum = 0;
    for (int j = 0; j < 32; ++j) {
      x[i * 32 + j] = uni(rng);
      if (j < 4) sum += x[i * 32 + j];
    }
    y[i] = learnable ? int64_t(sum > 2.0f) : static_cast<int64_t>(rng() & 1);
  }
  return {{"x", Tensor::FromVector(x, {batch, 32})}, {"y", Tensor::FromVector(y, {batch, 1})}};
}

// FNV-1a over every parameter's bytes, in name order: equal on every rank
// when the ranks' parameters are bit-identical.
uint64_t ParamsFnv(const Program& program) {
  std::vector<std::string> names;
  for (const VarDesc* v : program.global_block().AllVars()) {
    if (v->is_parameter && v->persistable) names.push_back(v->name);
  }
  std::sort(names.begin(), names.end());
  uint64_t h = 1469598103934665603ull;
  for (const std::string& name : names) {
    const Tensor& t = global_scope().GetVar(name).GetTensor();
    const auto* p = static_cast<const unsigned char*>(t.raw_data());
    for (size_t i = 0; i < t.nbytes(); ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
  return h;
}

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The training loop of a fault-tolerant job: each step a transaction; a
// dropped step is redone in the re-formed world from the same position.
float TrainFaultTolerant(Executor& exe, Program& train_prog, const Model& m, const Flags& flags,
                         int64_t first) {
  fleet::StepState state{first, first * flags.batch_size * fleet::worker_num()};
  float loss = 0;
  bool reformed = false;
  while (state.step < flags.steps) {
    const int rank = fleet::worker_index();
    const int64_t i = state.step;
    FeedMap feed = SamplesAt(state.position + int64_t{rank} * flags.batch_size, flags.batch_size,
                             flags.labels == "sum");
    const bool fetch = i % std::max(1, flags.fetch_frequency) == 0 || i == flags.steps - 1;
    std::vector<std::string> fetch_list;
    if (fetch) fetch_list.push_back(m.loss.name());
    auto out = fleet::run_step(exe, train_prog, feed, fetch_list, state, flags.batch_size);
    if (!out) {
      reformed = true;
      continue;
    }
    if (reformed) {
      reformed = false;
      std::cout << "fault tolerance: step " << i << " committed at unix_ms=" << UnixMs()
                << " world=" << fleet::worker_num() << std::endl;
    }
    if (fetch) loss = (*out)[0].data<float>()[0];
    if (fetch && fleet::worker_index() == 0 && i % 10 == 0) {
      std::cout << "step" << i << " cost=" << loss << " ranks=" << fleet::worker_num() << std::endl;
    }
  }
  const fleet::FaultStats& f = fleet::default_fleet().fault_stats();
  nlohmann::json out = {{"rank", fleet::worker_index()},
                        {"world", fleet::worker_num()},
                        {"pid", static_cast<int64_t>(getpid())},
                        {"steps", state.step},
                        {"position", state.position},
                        {"params_fnv", StrCat(ParamsFnv(train_prog))},
                        {"faults", f.faults},
                        {"steps_lost", f.steps_lost},
                        {"reform_ms", f.last_reform_ms},
                        {"recovery_ms", f.last_recovery_ms}};
  std::cout << out.dump() << std::endl;
  return loss;
}

// Difference 2a: the role. Started as one rank of a job — by flotilla
// launch, torchrun-style variables, srun, mpirun or a Kubernetes pod — it
// reads its role from the environment; otherwise it runs as the only worker.
std::unique_ptr<fleet::RoleMaker> MakeRole(const std::string& kind) {
  if (kind == "mpi") return std::make_unique<fleet::MPISymetricRoleMaker>();
  if (kind == "cloud" && fleet::RoleInEnvironment()) {
    return std::make_unique<fleet::PaddleCloudRoleMaker>(/*is_collective=*/true);
  }
  FLOTILLA_CHECK(kind == "cloud", InvalidArgument, "--role must be cloud or mpi, not '", kind, "'");
  return std::make_unique<fleet::UserDefinedRoleMaker>(0, fleet::Role::kWorker, 1);
}

// Difference 2b: the strategy, with the seed's tuning flags.
fleet::DistributedStrategy MakeStrategy(const Flags& f) {
  if (!f.strategy_file.empty()) return fleet::DistributedStrategy::FromTextFile(f.strategy_file);
  fleet::DistributedStrategy s;
  s.set_nccl_comm_num(f.comm_num);
  s.Set("exec_strategy.num_threads", f.num_threads);
  s.Set("exec_strategy.num_iteration_per_drop_scope", f.num_iteration_per_drop_scope);
  s.set_fuse_all_reduce_ops(f.fuse);
  s.set_fuse_grad_size_in_MB(f.fuse_mb);
  if (f.localsgd_k > 0) {
    s.set_localsgd(true);
    s.Set("localsgd_configs.k_steps", f.localsgd_k);
  }
  return s;
}

int Run(const Flags& flags) {
  RegisterAllOps();
  math::SetBlasThreads(1);  // until minimize applies exec_strategy.num_threads
  Program main, startup;
  if (flags.seed != 0) main.set_random_seed(flags.seed), startup.set_random_seed(flags.seed);
  ProgramGuard guard(main, startup);
  Model m = Mlp(flags.hidden);
  optimizer::SGD sgd(flags.lr);

  auto role = MakeRole(flags.role);
  fleet::FleetOptions options;
  options.backend = flags.backend;
  fleet::init(*role, options);
  fleet::DistributedStrategy strategy = MakeStrategy(flags);
  // Difference 3: wrap the optimizer and minimize through it.
  auto opt = fleet::distributed_optimizer(sgd, strategy);
  opt.minimize(m.loss, &startup);
  Program& train_prog = fleet::main_program();

  Executor exe(CPUPlace());
  exe.run(fleet::startup_program());  // parameters broadcast from rank 0
  OpProfile profile;
  if (flags.profile) profile.Attach(exe);
  int rank = fleet::worker_index(), ranks = fleet::worker_num();
  // A restarted run continues from the newest checkpoint, with fresh data.
  int64_t first = 0;
  if (!flags.checkpoint_dir.empty()) {
    if (auto state = fleet::load_checkpoint(exe, flags.checkpoint_dir)) first = state->step;
  }
  DataGen data(flags.batch_size, 2021 + 7919 * static_cast<uint64_t>(rank) + 104729 * first,
               flags.labels == "sum");
  int fetch_every = std::max(1, flags.fetch_frequency);
  float loss = 0;
  auto start = std::chrono::steady_clock::now();
  double cpu_start = CpuSeconds();
  const bool fault_tolerant = fleet::default_fleet().fault_tolerant();
  if (fault_tolerant) {
    loss = TrainFaultTolerant(exe, train_prog, m, flags, first);
    rank = fleet::worker_index(), ranks = fleet::worker_num();
  }
  for (int i = static_cast<int>(first); i < flags.steps && !fault_tolerant; ++i) {
    if (i == flags.warmup) start = std::chrono::steady_clock::now(), cpu_start = CpuSeconds();
    if (i % fetch_every == 0 || i == flags.steps - 1 || (first > 0 && i == first)) {
      loss = exe.run(train_prog, data.Next(), {m.loss.name()})[0].data<float>()[0];
      if (rank == 0 && first > 0 && i == first) {
        std::cout << "resumed at step " << i << " cost=" << loss << " ranks=" << ranks
                  << std::endl;
      }
      if (rank == 0 && i % 10 == 0) std::cout << "step" << i << " cost=" << loss << std::endl;
    } else {
      exe.run(train_prog, data.Next());
    }
    // (A finished run needs none: its end is saved with --model_dir.)
    if (!flags.checkpoint_dir.empty() && (i + 1) % flags.checkpoint_every == 0 &&
        i + 1 < flags.steps) {
      fleet::save_checkpoint(exe, flags.checkpoint_dir, i + 1);
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double cpu_secs = CpuSeconds() - cpu_start;
  int timed = std::max(1, flags.steps - std::min(flags.warmup, flags.steps - 1));
  if (flags.profile && rank == 0) profile.Print(flags.steps);
  // Difference 4: rank 0 saves, the others wait.
  if (!flags.model_dir.empty()) fleet::save_persistables(exe, flags.model_dir);
  fleet::barrier_worker();
  if (rank == 0) {
    nlohmann::json out = {{"loss", loss},
                          {"samples_per_sec", secs > 0 ? double(timed) * flags.batch_size * ranks / secs : 0.0},
                          {"ranks", ranks},
                          {"rank0_cpu_ms_per_step", 1e3 * cpu_secs / timed},
                          {"rank0_wall_ms_per_step", 1e3 * secs / timed},
                          {"steps", flags.steps}};
    std::cout << out.dump() << std::endl;
  }
  return 0;
}

// The image-classification job's own flags (Paddle's train.py names).
void AddImageFlags(CLI::App& app, examples::ImageClassifierFlags& c) {
  c.model = "mlp";
  app.add_option("--model", c.model, "mlp (the example's program), ResNet18|34|50|101|152 or LeNet");
  app.add_option("--data_dir", c.data_dir, "ImageNet layout: train_list.txt, val_list.txt, images");
  app.add_option("--num_epochs", c.num_epochs, "epochs")->check(CLI::PositiveNumber);
  app.add_option("--lr_strategy", c.lr_strategy, "piecewise_decay, cosine_decay or constant");
  app.add_option("--warm_up_epochs", c.warm_up_epochs, "linear warmup epochs")->check(CLI::NonNegativeNumber);
  app.add_option("--momentum_rate", c.momentum_rate, "Momentum's momentum");
  app.add_option("--l2_decay", c.l2_decay, "L2 weight decay");
  app.add_option("--label_smoothing_epsilon", c.label_smoothing_epsilon, "label smoothing (0: off)");
  app.add_option("--image_size", c.image_size, "crop size")->check(CLI::PositiveNumber);
  app.add_option("--resize_short_size", c.resize_short_size, "validation: short side before the centre crop (0: image_size * 256 / 224)");
  app.add_option("--lower_scale", c.lower_scale, "random-resized crop's smallest area fraction");
  app.add_option("--random_flip", c.random_flip, "random horizontal flips (true/false)");
  app.add_option("--class_dim", c.class_dim, "classes (0: from the labels)");
  app.add_option("--print_step", c.print_step, "print every N steps")->check(CLI::PositiveNumber);
  app.add_option("--max_iter", c.max_iter, "steps per epoch at most (0: the whole epoch)");
  app.add_option("--reader_thread", c.reader_thread, "JPEG decode threads")->check(CLI::PositiveNumber);
  app.add_option("--random_seed", c.random_seed, "parameter init and augmentation seed (0: random init)");
  app.add_option("--validate", c.validate, "evaluate val_list.txt after each epoch (true/false)");
  app.add_flag("--fp16", c.fp16, "float16 training (refused: needs a GPU)");
  app.add_option("--use_hierarchical_allreduce", c.use_hierarchical_allreduce, "reduce within hosts first");
  app.add_option("--use_local_sgd", c.use_local_sgd, "LocalSGD instead of per-step all-reduce");
  app.add_option("--local_sgd_steps", c.local_sgd_steps, "LocalSGD k_steps")->check(CLI::PositiveNumber);
  app.add_option("--sync_bn", c.sync_bn, "batch-norm statistics over every rank's batch (true/false)");
}

// Flags both jobs read, with the image job's defaults unless given.
void SharedFlags(const CLI::App& app, const Flags& f, examples::ImageClassifierFlags& c) {
  if (app.count("--batch_size")) c.batch_size = f.batch_size;
  if (app.count("--lr")) c.lr = f.lr;
  if (app.count("--comm_num")) c.nccl_comm_num = f.comm_num;
  if (app.count("--fuse_mb")) c.fuse_mb = f.fuse_mb;
  c.fuse = f.fuse;
  c.backend = f.backend;
  c.model_dir = f.model_dir;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"train_with_fleet: an mlp trained data-parallel with fleet"};
  Flags f;
  app.add_option("--steps", f.steps, "training steps")->check(CLI::PositiveNumber);
  app.add_option("--batch_size", f.batch_size, "samples per step per rank")->check(CLI::PositiveNumber);
  app.add_option("--lr", f.lr, "SGD learning rate")->check(CLI::PositiveNumber);
  app.add_option("--hidden", f.hidden, "width of the hidden layers")->check(CLI::PositiveNumber);
  app.add_option("--comm_num,--nccl_comm_num", f.comm_num, "communicators (nccl_comm_num)")->check(CLI::PositiveNumber);
  app.add_option("--num_threads", f.num_threads, "exec_strategy.num_threads");
  app.add_option("--num_iteration_per_drop_scope", f.num_iteration_per_drop_scope,
                 "exec_strategy.num_iteration_per_drop_scope");
  app.add_option("--fuse", f.fuse, "fuse_all_reduce_ops (true/false)");
  app.add_option("--fuse_mb", f.fuse_mb, "fuse_grad_size_in_MB")->check(CLI::PositiveNumber);
  app.add_option("--fetch_frequency", f.fetch_frequency, "fetch the loss every N steps")
      ->check(CLI::PositiveNumber);
  app.add_option("--localsgd_k", f.localsgd_k, "LocalSGD k_steps (0: off)")->check(CLI::NonNegativeNumber);
  app.add_option("--warmup", f.warmup, "steps left out of samples_per_sec")->check(CLI::NonNegativeNumber);
  app.add_option("--role", f.role, "cloud (env contract, default) or mpi (mpirun)");
  app.add_option("--backend", f.backend, "collective backend: auto, shm, gloo or hierarchical");
  app.add_option("--strategy", f.strategy_file, "DistributedStrategy text file (overrides the flags)");
  app.add_option("--model_dir", f.model_dir, "save persistables here at the end");
  app.add_option("--checkpoint_dir", f.checkpoint_dir,
                 "save checkpoints here; resume from the newest");
  app.add_option("--checkpoint_every", f.checkpoint_every, "steps between checkpoints")
      ->check(CLI::PositiveNumber);
  app.add_option("--labels", f.labels, "random (gen_data) or sum (learnable: sum(x[0..3]) > 2)")
      ->check(CLI::IsMember({"random", "sum"}));
  app.add_option("--seed", f.seed, "program random seed: the same seed trains to the same "
                 "loss in every run (0: random)");
  app.add_flag("--profile", f.profile, "print milliseconds per step of each op type (rank 0)");
  examples::ImageClassifierFlags cnn;
  AddImageFlags(app, cnn);
  CLI11_PARSE(app, argc, argv);
  return flotilla::examples::RunExample("train_with_fleet", [&] {
    if (cnn.model == "mlp") return Run(f);
    SharedFlags(app, f, cnn);
    return examples::TrainImageClassifier(cnn, *MakeRole(f.role));
  });
}
