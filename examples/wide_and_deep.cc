// Seed 004's wide & deep CTR model trained by parameter servers through the
// Fleet PS API.
//
//   wide: a sparse linear part over the hashed categorical ids (an
//         is_distributed embedding of width 1, summed) + a linear term of
//         the dense features
//   deep: is_distributed embeddings of the 26 ids ++ 13 dense features →
//         fc 400-400-400 relu → fc 1
//   p = sigmoid(wide + deep), sigmoid log loss
//
// Data: the synthetic CTR generator (io/datasets/ctr.h; each worker its own
// stream) or Criteo-format text files (--train_file/--test_file). Run it
// under `flotilla launch --server_num 1 --worker_num 2 build/bin/wide_and_deep`.
// Worker 0 prints the test AUC; each worker's last line is a JSON object
//   {"role":"worker","worker":…,"mode":…,"auc":…,"bayes_auc":…,"samples_per_sec":…,"steps":…}
// (bayes_auc: the generator's ground truth on the same test samples; null
// for Criteo files), a server's {"role":"pserver","endpoint":…}.
#include <CLI/CLI.hpp>
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "example_main.h"
#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/common/enforce.h"
#include "flotilla/fleet/fleet.h"
#include "flotilla/io/datasets/ctr.h"

using namespace flotilla;
namespace ctr = flotilla::io::ctr;

namespace {

struct Flags {
  std::string mode = "sync";
  int k_steps = 100;
  int64_t train_samples = 100000;  // per worker
  int64_t test_samples = 20000;
  int64_t batch_size = 64;
  float lr = 0;  // 0: 0.5, or 0.2 in async mode, whose stale merged pushes diverge at 0.5
  int64_t hidden_size = 400;
  int hidden_layers = 3;
  int64_t embedding_dim = 8;
  int64_t vocab_per_slot = 1'000'000;
  uint64_t seed = 1;
  std::string train_file, test_file;
  int log_every = 200;
  // Async communicator (strategy.a_sync_configs). Merging up to 16 queued
  // gradients per push keeps the queue short: one push per gradient (the
  // strategy's default) lets staleness grow until SGD 0.5 diverges.
  int send_queue_size = 16;
  int max_merge_var_num = 16;
  bool independent_recv_thread = false;
};

struct Model {
  Variable dense, ids, label, predict, loss;
};

Model BuildModel(const Flags& f) {
  Model m;
  m.dense = layers::data("dense", {ctr::kDenseFeatures});
  m.ids = layers::data("ids", {ctr::kSlots}, DType::kInt64);
  m.label = layers::data("label", {1});
  const int64_t height = ctr::kSlots * f.vocab_per_slot;
  auto init = [&](double a, int salt) {
    return std::make_shared<initializer::Uniform>(-a, a, static_cast<int>(f.seed) * 31 + salt);
  };
  auto wide_w = layers::embedding(m.ids, {height, 1}, true, true, -1, ParamAttr::Named("wide_w", init(0.01, 1)));
  auto wide = layers::reduce_sum(layers::reshape(wide_w, {-1, ctr::kSlots}), {1}, /*keep_dim=*/true);
  auto wide_dense = layers::fc(m.dense, 1);
  auto emb = layers::embedding(m.ids, {height, f.embedding_dim}, true, true, -1,
                               ParamAttr::Named("deep_emb", init(0.05, 2)));
  auto h = layers::concat({layers::reshape(emb, {-1, ctr::kSlots * f.embedding_dim}), m.dense}, 1);
  for (int i = 0; i < f.hidden_layers; ++i) h = layers::fc(h, f.hidden_size, 1, {}, {}, "relu");
  auto logit = layers::elementwise_add(layers::elementwise_add(wide, wide_dense), layers::fc(h, 1));
  m.predict = layers::sigmoid(logit);
  m.loss = layers::mean(layers::sigmoid_cross_entropy_with_logits(logit, m.label));
  return m;
}

// Batches from the generator or a Criteo file.
class Source {
 public:
  Source(const Flags& f, const std::string& file, uint64_t seed, int64_t limit)
      : gen_({.vocab_per_slot = f.vocab_per_slot}, seed), limit_(limit) {
    if (!file.empty()) {
      in_ = std::make_unique<std::ifstream>(file);
      FLOTILLA_CHECK(in_->good(), NotFound, "wide_and_deep: cannot open '", file, "'");
      criteo_.vocab_per_slot = f.vocab_per_slot;
    }
  }
  std::optional<ctr::CtrBatch> Next(int64_t batch) {
    if (done_ >= limit_) return std::nullopt;
    batch = std::min(batch, limit_ - done_);
    std::optional<ctr::CtrBatch> b = in_ ? ctr::ReadCriteo(*in_, batch, criteo_, &line_) : gen_.Next(batch);
    if (b) done_ += b->size();
    return b;
  }
  bool synthetic() const { return in_ == nullptr; }

 private:
  ctr::CtrGenerator gen_;
  std::unique_ptr<std::ifstream> in_;
  ctr::CriteoOptions criteo_;
  int64_t limit_, done_ = 0, line_ = 0;
};

FeedMap Feed(const Model& m, const ctr::CtrBatch& b) {
  return {{m.dense.name(), b.dense}, {m.ids.name(), b.ids}, {m.label.name(), b.label}};
}

nlohmann::json Evaluate(Executor& exe, const Program& test, const Model& m, const Flags& f) {
  Source src(f, f.test_file, f.seed + 100000, f.test_samples);
  std::vector<float> scores, labels, truth;
  while (auto b = src.Next(1024)) {
    auto out = exe.run(test, Feed(m, *b), {m.predict.name()});
    const float* p = out[0].data<float>();
    scores.insert(scores.end(), p, p + b->size());
    labels.insert(labels.end(), b->label.data<float>(), b->label.data<float>() + b->size());
    truth.insert(truth.end(), b->truth.begin(), b->truth.end());
  }
  nlohmann::json r = {{"auc", ctr::Auc(scores, labels)}, {"bayes_auc", nullptr}};
  if (src.synthetic()) r["bayes_auc"] = ctr::Auc(truth, labels);
  return r;
}

fleet::DistributedStrategy Strategy(const Flags& f) {
  fleet::DistributedStrategy s;
  s.set_a_sync(f.mode != "sync");
  if (f.mode == "geo") s.a_sync_configs().set_k_steps(f.k_steps);
  s.a_sync_configs().set_send_queue_size(f.send_queue_size);
  s.a_sync_configs().set_max_merge_var_num(f.max_merge_var_num);
  s.a_sync_configs().set_independent_recv_thread(f.independent_recv_thread);
  return s;
}

int RunWorker(const Flags& f, const Model& m, const Program& test_clone) {
  Executor exe(CPUPlace());
  exe.run(fleet::startup_program());
  fleet::init_worker();
  Program test = fleet::default_fleet().ps_transpiler()->get_test_program(test_clone);
  Source train(f, f.train_file, f.seed + 1 + fleet::worker_index(), f.train_samples);
  int64_t samples = 0, steps = 0;
  auto start = std::chrono::steady_clock::now();
  while (auto b = train.Next(f.batch_size)) {
    auto out = exe.run(fleet::main_program(), Feed(m, *b), {m.loss.name()});
    samples += b->size();
    if (++steps % f.log_every == 0) {
      std::cout << "worker " << fleet::worker_index() << " step " << steps << " loss "
                << out[0].data<float>()[0] << std::endl;
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json r = Evaluate(exe, test, m, f);
  fleet::stop_worker();
  r.update({{"role", "worker"}, {"worker", fleet::worker_index()}, {"mode", f.mode},
            {"samples_per_sec", secs > 0 ? samples / secs : 0.0}, {"steps", steps}});
  if (fleet::worker_index() == 0) std::cout << "test AUC " << r["auc"] << std::endl;
  std::cout << r.dump() << std::endl;
  return 0;
}

int Run(const Flags& f) {
  fleet::PaddleCloudRoleMaker role;  // TRAINING_ROLE etc. (flotilla launch sets them)
  fleet::init(role);
  Program main, startup;
  ProgramGuard guard(main, startup);
  main.set_random_seed(f.seed);
  startup.set_random_seed(f.seed);
  Model m = BuildModel(f);
  Program test_clone = main.Clone(/*for_test=*/true);
  optimizer::SGD sgd(f.lr);
  fleet::distributed_optimizer(sgd, Strategy(f)).minimize(m.loss);
  if (fleet::is_server()) {
    fleet::init_server();
    fleet::run_server();
    std::cout << nlohmann::json{{"role", "pserver"}, {"endpoint", role.current_endpoint()}}.dump()
              << std::endl;
    return 0;
  }
  return RunWorker(f, m, test_clone);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"wide_and_deep: seed 004's CTR model on parameter servers"};
  Flags f;
  app.add_option("--mode", f.mode, "sync | async | geo")->check(CLI::IsMember({"sync", "async", "geo"}));
  app.add_option("--k_steps", f.k_steps, "GEO: local steps between syncs")->check(CLI::PositiveNumber);
  app.add_option("--train_samples", f.train_samples, "training samples per worker")->check(CLI::PositiveNumber);
  app.add_option("--test_samples", f.test_samples, "test samples")->check(CLI::PositiveNumber);
  app.add_option("--batch_size", f.batch_size, "samples per step")->check(CLI::PositiveNumber);
  app.add_option("--lr", f.lr, "SGD learning rate (default 0.5; 0.2 in async mode)")
      ->check(CLI::PositiveNumber);
  app.add_option("--hidden_size", f.hidden_size, "width of the deep fc layers")->check(CLI::PositiveNumber);
  app.add_option("--hidden_layers", f.hidden_layers, "number of deep fc layers")->check(CLI::NonNegativeNumber);
  app.add_option("--embedding_dim", f.embedding_dim, "deep embedding width")->check(CLI::PositiveNumber);
  app.add_option("--vocab_per_slot", f.vocab_per_slot, "possible ids per categorical slot")->check(CLI::PositiveNumber);
  app.add_option("--seed", f.seed, "random seed");
  app.add_option("--train_file", f.train_file, "Criteo-format training data (default: synthetic)");
  app.add_option("--test_file", f.test_file, "Criteo-format test data (default: synthetic)");
  app.add_option("--log_every", f.log_every, "print the loss every this many steps")->check(CLI::PositiveNumber);
  app.add_option("--send_queue_size", f.send_queue_size, "async: gradients queued per variable")->check(CLI::PositiveNumber);
  app.add_option("--max_merge_var_num", f.max_merge_var_num, "async: gradients merged into one push")->check(CLI::PositiveNumber);
  app.add_flag("--independent_recv_thread", f.independent_recv_thread, "async: pull on a thread of its own");
  CLI11_PARSE(app, argc, argv);
  if (f.lr == 0) f.lr = f.mode == "async" ? 0.2f : 0.5f;
  return flotilla::examples::RunExample("wide_and_deep", [&] { return Run(f); });
}
