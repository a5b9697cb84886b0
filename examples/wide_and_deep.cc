// Paddle's wide & deep CTR model (PaddleRec) trained by parameter servers through the
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
//
// Large tables and CTR accessors (strategy.sparse_table_configs):
//   --table_class ssd --memory_budget_mb 1024   rows beyond 1 GiB per server on disk
//   --admit_count 2 --delete_after_unseen_passes 1 --passes 3
//                                 admit ids seen twice; shrink after each pass
//   --prefill_rows N              worker 0 first pulls ids [0, N) of every table
// Restarts: --save_dir D --save_at_step K saves after step K (tables on the
// servers, the rest from worker 0); --load_dir D --skip_samples S starts
// from that save and skips the samples already trained on.
// --checkpoint_dir D --checkpoint_every N: fleet checkpoints (the servers'
// tables included) every N steps; a job started again resumes from the
// newest one, skipping the samples its steps consumed.
// Heterogeneous PS (`flotilla launch --heter_worker_num 2 ... --mode async`):
// the trainers look up the embeddings and push their gradients, the heter
// workers run the fc layers (--pipeline_depth batches in flight per
// trainer; --boundary_vars overrides where the program is cut). A heter
// worker's last line is {"role":"heter_worker","endpoint":…}.
// Paddle's Dataset path (--reader dataset --threads N): each worker first
// writes its training samples as MultiSlot text files under --data_dir
// ("13 <dense> 26 <ids> 1 <label>" per line), then trains on them with
// io::TrainFromDataset on N Hogwild threads, reading the files through
// --pipe_command (a QueueDataset, or an InMemoryDataset loaded before the
// clock starts with --dataset_kind InMemoryDataset). Its JSON line adds
// "reader", "threads" and "samples_per_sec_per_thread".
#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "example_main.h"
#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/common/enforce.h"
#include "flotilla/fleet/checkpoint.h"
#include "flotilla/fleet/fleet.h"
#include "flotilla/io/dataset_trainer.h"
#include "flotilla/io/datasets/ctr.h"
#include "flotilla/ps/trainer_runtime.h"

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
  std::string optimizer = "sgd";  // sgd | adagrad
  // strategy.sparse_table_configs
  std::string table_class = "memory";
  int64_t memory_budget_mb = 0;
  std::string ssd_path;
  int admit_count = 0;
  float admit_probability = 1.0f;
  int delete_after_unseen_passes = 0;
  float delete_threshold = 0.0f;
  bool click_stats = false;  // the label is each id's click
  int passes = 1;            // fleet::shrink() between passes
  int64_t prefill_rows = 0;
  std::string save_dir, load_dir;
  int64_t save_at_step = 0;
  int64_t skip_samples = 0;
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  int pipeline_depth = 2;
  int prefetch_batches = 2;  // GEO: batches whose rows are pulled ahead
  std::vector<std::string> boundary_vars;
  std::string reader = "feed";  // feed | dataset
  int threads = 1;
  std::string data_dir = "wide_and_deep_data";
  std::string pipe_command = "cat";
  std::string dataset_kind = "QueueDataset";
  bool dataset_debug = false;
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

fleet::DistributedStrategy Strategy(const Flags& f, const Model& m) {
  fleet::DistributedStrategy s;
  s.Set("sparse_table_configs.table_class", f.table_class);
  s.Set("sparse_table_configs.memory_budget_mb", f.memory_budget_mb);
  s.Set("sparse_table_configs.ssd_path", f.ssd_path);
  s.Set("sparse_table_configs.admit_count", f.admit_count);
  s.Set("sparse_table_configs.admit_probability", f.admit_probability);
  s.Set("sparse_table_configs.delete_after_unseen_passes", f.delete_after_unseen_passes);
  s.Set("sparse_table_configs.delete_threshold", f.delete_threshold);
  if (f.click_stats) s.Set("sparse_table_configs.click_var", m.label.name());
  s.set_a_sync(f.mode != "sync");
  if (f.mode == "geo") s.Set("a_sync_configs.k_steps", f.k_steps);
  s.Set("a_sync_configs.send_queue_size", f.send_queue_size);
  s.Set("a_sync_configs.max_merge_var_num", f.max_merge_var_num);
  s.Set("a_sync_configs.independent_recv_thread", f.independent_recv_thread);
  s.Set("heter_configs.pipeline_depth", f.pipeline_depth);
  s.Set("heter_configs.boundary_vars", f.boundary_vars);
  return s;
}

// Worker 0 pulls ids [0, rows) of every sparse table once: a table of that
// many rows before training starts (as if loaded from an earlier job).
void Prefill(int64_t rows) {
  if (rows <= 0 || fleet::worker_index() != 0) return;
  auto rt = ps::RequireTrainerRuntime("--prefill_rows");
  const auto start = std::chrono::steady_clock::now();
  std::vector<int64_t> keys;
  for (int64_t first = 0; first < rows; first += 65536) {
    keys.resize(std::min<int64_t>(65536, rows - first));
    for (size_t i = 0; i < keys.size(); ++i) keys[i] = first + static_cast<int64_t>(i);
    for (const char* table : {"wide_w", "deep_emb"}) {
      rt->client->PullSparse(table, keys, [](std::span<const uint32_t>, const float*, int64_t) {});
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << nlohmann::json{{"prefill_rows", rows}, {"seconds", secs}}.dump() << std::endl;
}

int RunWorker(const Flags& f, const Model& m, const Program& test_clone) {
  Executor exe(CPUPlace());
  exe.run(fleet::startup_program());
  fleet::init_worker(/*servers_loaded=*/!f.load_dir.empty());
  Prefill(f.prefill_rows);
  Program test = fleet::default_fleet().ps_transpiler()->get_test_program(test_clone);
  int64_t steps = 0, skip = f.skip_samples;
  if (!f.checkpoint_dir.empty()) {
    if (auto state = fleet::load_checkpoint(exe, f.checkpoint_dir)) {
      steps = state->step;
      skip += steps * f.batch_size;
      std::cout << "resumed at step " << steps << std::endl;
    }
  }
  Source train(f, f.train_file, f.seed + 1 + fleet::worker_index(), f.skip_samples + f.train_samples);
  for (int64_t skipped = 0; skipped < skip;) {  // what an earlier job trained on already
    auto b = train.Next(std::min(f.batch_size, skip - skipped));
    if (!b) break;
    skipped += b->size();
  }
  int64_t samples = 0, dropped = 0;
  const int64_t per_pass = (f.train_samples + f.passes - 1) / f.passes;
  auto start = std::chrono::steady_clock::now();
  const bool heter = fleet::is_heter_job();
  std::deque<ctr::CtrBatch> queue;  // this batch, then the ones whose rows are on the way
  while (true) {
    for (std::optional<ctr::CtrBatch> n; queue.size() <= static_cast<size_t>(f.prefetch_batches);) {
      if (!(n = train.Next(f.batch_size))) break;
      // GEO: pulled while earlier batches compute (async pulls ahead only
      // on the dataset path, one batch ahead)
      if (!queue.empty() && f.mode == "geo") fleet::prefetch_sparse(Feed(m, *n));
      queue.push_back(std::move(*n));
    }
    if (queue.empty()) break;
    const std::optional<ctr::CtrBatch> b = std::move(queue.front());
    queue.pop_front();
    // Heterogeneous jobs return the loss of an earlier batch (none while
    // the pipeline fills).
    auto out = heter ? fleet::heter_train_step(exe, Feed(m, *b), {m.loss.name()})
                     : exe.run(fleet::main_program(), Feed(m, *b), {m.loss.name()});
    samples += b->size();
    if (++steps % f.log_every == 0 && !out.empty()) {
      std::cout << "worker " << fleet::worker_index() << " step " << steps << " loss "
                << out[0].data<float>()[0] << std::endl;
    }
    if (f.checkpoint_every > 0 && steps % f.checkpoint_every == 0) {
      fleet::save_checkpoint(exe, f.checkpoint_dir, steps);
    }
    if (steps == f.save_at_step && !f.save_dir.empty()) {
      fleet::save_persistables(exe, f.save_dir);
      std::cout << "saved after step " << steps << " to " << f.save_dir << std::endl;
    }
    if (samples % per_pass < b->size() && samples < f.train_samples) dropped += fleet::shrink();
  }
  if (heter) fleet::heter_flush(exe);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json r = Evaluate(exe, test, m, f);
  fleet::stop_worker();
  r.update({{"role", "worker"}, {"worker", fleet::worker_index()}, {"mode", f.mode},
            {"samples_per_sec", secs > 0 ? samples / secs : 0.0}, {"steps", steps}});
  if (f.passes > 1) r["shrunk_rows"] = dropped;
  if (fleet::worker_index() == 0) std::cout << "test AUC " << r["auc"] << std::endl;
  std::cout << r.dump() << std::endl;
  return 0;
}

// Appends `v` and a space to `line`.
template <typename T>
void AppendNumber(std::string& line, T v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  line.append(buf, end);
  line.push_back(' ');
}

// The worker's training samples as MultiSlot files (2 per thread, records
// dealt round-robin by batch); returns their paths.
std::vector<std::string> WriteMultiSlot(const Flags& f) {
  const std::string dir = f.data_dir + "/worker" + std::to_string(fleet::worker_index());
  std::filesystem::create_directories(dir);
  std::vector<std::string> paths;
  std::vector<std::ofstream> out;
  for (int p = 0; p < 2 * f.threads; ++p) {
    paths.push_back(dir + "/part-" + std::to_string(p));
    out.emplace_back(paths.back(), std::ios::trunc);
    FLOTILLA_CHECK(out.back().good(), NotFound, "wide_and_deep: cannot write '", paths.back(), "'");
  }
  Source train(f, f.train_file, f.seed + 1 + fleet::worker_index(), f.train_samples);
  std::string line;
  for (size_t part = 0; auto b = train.Next(1024); part = (part + 1) % out.size()) {
    for (int64_t r = 0; r < b->size(); ++r) {
      line.clear();
      AppendNumber(line, ctr::kDenseFeatures);
      for (int64_t d = 0; d < ctr::kDenseFeatures; ++d) AppendNumber(line, b->dense.data<float>()[r * ctr::kDenseFeatures + d]);
      AppendNumber(line, ctr::kSlots);
      for (int64_t s = 0; s < ctr::kSlots; ++s) AppendNumber(line, b->ids.data<int64_t>()[r * ctr::kSlots + s]);
      line += "1 ";
      AppendNumber(line, b->label.data<float>()[r]);
      line.back() = '\n';
      out[part] << line;
    }
  }
  return paths;
}

int RunWorkerFromDataset(const Flags& f, const Model& m, const Program& test_clone) {
  Executor exe(CPUPlace());
  exe.run(fleet::startup_program());
  fleet::init_worker();
  Program test = fleet::default_fleet().ps_transpiler()->get_test_program(test_clone);
  io::Dataset ds(io::DatasetKindFromString(f.dataset_kind));
  ds.SetUseVar({{m.dense.name(), io::SlotType::kFloat32, {-1, ctr::kDenseFeatures}},
                {m.ids.name(), io::SlotType::kInt64, {-1, ctr::kSlots}},
                {m.label.name(), io::SlotType::kFloat32, {-1, 1}}});
  ds.SetPipeCommand(f.pipe_command);
  ds.SetFileList(WriteMultiSlot(f));
  ds.SetBatchSize(f.batch_size);
  ds.SetThreadNum(f.threads);
  if (ds.kind() == io::DatasetKind::kInMemory) ds.LoadIntoMemory();
  io::DatasetTrainOptions opt;
  opt.threads = f.threads;
  opt.fetch_list = {m.loss.name()};
  opt.fetch_info = {"loss"};
  opt.print_period = f.log_every;
  opt.debug = f.dataset_debug;
  opt.on_next_feed = [](const FeedMap& next) { fleet::prefetch_sparse(next); };
  const io::DatasetTrainStats stats = io::TrainFromDataset(fleet::main_program(), ds, nullptr, opt);
  nlohmann::json r = Evaluate(exe, test, m, f);
  fleet::stop_worker();
  const double rate = stats.seconds > 0 ? static_cast<double>(stats.instances) / stats.seconds : 0.0;
  r.update({{"role", "worker"}, {"worker", fleet::worker_index()}, {"mode", f.mode}, {"reader", "dataset"},
            {"dataset_kind", f.dataset_kind}, {"threads", f.threads}, {"samples_per_sec", rate},
            {"samples_per_sec_per_thread", rate / f.threads}, {"steps", stats.batches}});
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
  std::unique_ptr<optimizer::Optimizer> opt;
  if (f.optimizer == "adagrad") {
    opt = std::make_unique<optimizer::Adagrad>(f.lr);
  } else {
    opt = std::make_unique<optimizer::SGD>(f.lr);
  }
  fleet::distributed_optimizer(*opt, Strategy(f, m)).minimize(m.loss);
  if (fleet::is_server()) {
    fleet::init_server(f.load_dir);
    fleet::run_server();
    std::cout << nlohmann::json{{"role", "pserver"}, {"endpoint", role.current_endpoint()}}.dump()
              << std::endl;
    return 0;
  }
  if (fleet::is_heter_worker()) {
    Executor exe(CPUPlace());
    exe.run(fleet::startup_program());
    fleet::init_worker();
    fleet::run_heter_worker();
    fleet::stop_worker();
    std::cout << nlohmann::json{{"role", "heter_worker"}, {"endpoint", role.current_endpoint()}}.dump()
              << std::endl;
    return 0;
  }
  FLOTILLA_CHECK(!fleet::is_heter_job() || (f.save_dir.empty() && f.load_dir.empty() &&
                                            f.checkpoint_dir.empty() && f.passes == 1),
                 InvalidArgument, "wide_and_deep: --save_dir/--load_dir/--checkpoint_dir/--passes "
                 "are not available in heterogeneous jobs (the dense parameters live on the heter workers)");
  if (f.reader == "dataset") return RunWorkerFromDataset(f, m, test_clone);
  return RunWorker(f, m, test_clone);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"wide_and_deep: the wide & deep CTR model on parameter servers"};
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
  app.add_option("--optimizer", f.optimizer, "sgd | adagrad")->check(CLI::IsMember({"sgd", "adagrad"}));
  app.add_option("--table_class", f.table_class, "sparse tables: memory | ssd")
      ->check(CLI::IsMember({"memory", "ssd"}));
  app.add_option("--memory_budget_mb", f.memory_budget_mb, "ssd: memory for one server's sparse rows");
  app.add_option("--ssd_path", f.ssd_path, "ssd: where rows beyond the budget go");
  app.add_option("--admit_count", f.admit_count, "an id gets a row at its Nth sighting");
  app.add_option("--admit_probability", f.admit_probability, "or with this probability per sighting");
  app.add_option("--delete_after_unseen_passes", f.delete_after_unseen_passes,
                 "shrink drops rows unseen for this many passes");
  app.add_option("--delete_threshold", f.delete_threshold, "shrink drops rows scored below this");
  app.add_flag("--click_stats", f.click_stats, "pushes count the label as each id's click");
  app.add_option("--passes", f.passes, "passes over the training samples, shrink between them")
      ->check(CLI::PositiveNumber);
  app.add_option("--prefill_rows", f.prefill_rows, "worker 0 first pulls ids [0, N) of every table");
  app.add_option("--save_dir", f.save_dir, "save_persistables here after --save_at_step");
  app.add_option("--save_at_step", f.save_at_step, "the step after which to save");
  app.add_option("--load_dir", f.load_dir, "start from this save (servers load their tables)");
  app.add_option("--skip_samples", f.skip_samples, "skip this many training samples first");
  app.add_option("--checkpoint_dir", f.checkpoint_dir, "fleet checkpoints: resume from the newest, save here");
  app.add_option("--checkpoint_every", f.checkpoint_every, "save a checkpoint every this many steps");
  app.add_option("--prefetch_batches", f.prefetch_batches, "GEO: batches whose sparse rows are pulled ahead")
      ->check(CLI::Range(0, 3));
  app.add_option("--pipeline_depth", f.pipeline_depth, "heter jobs: mini-batches in flight per trainer")
      ->check(CLI::PositiveNumber);
  app.add_option("--boundary_vars", f.boundary_vars, "heter jobs: variables cut between trainer and heter worker");
  app.add_option("--reader", f.reader, "feed (batches fed by exe.run) | dataset (train_from_dataset)")
      ->check(CLI::IsMember({"feed", "dataset"}));
  app.add_option("--threads", f.threads, "dataset: Hogwild worker threads")->check(CLI::PositiveNumber);
  app.add_option("--data_dir", f.data_dir, "dataset: where each worker writes its MultiSlot files");
  app.add_option("--pipe_command", f.pipe_command, "dataset: the command each file is read through");
  app.add_option("--dataset_kind", f.dataset_kind, "dataset: QueueDataset | InMemoryDataset")
      ->check(CLI::IsMember({"QueueDataset", "InMemoryDataset"}));
  app.add_flag("--dataset_debug", f.dataset_debug, "dataset: print time per op and waiting for batches");
  CLI11_PARSE(app, argc, argv);
  if (f.lr == 0) f.lr = f.mode == "async" ? 0.2f : (f.optimizer == "adagrad" ? 0.05f : 0.5f);
  return flotilla::examples::RunExample("wide_and_deep", [&] { return Run(f); });
}
