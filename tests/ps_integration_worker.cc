// The processes of the parameter-server integration tests.
//
//   equal  --role local|pserver|trainer ...   a small model with a sliced
//          dense parameter and two is_sparse embeddings, 20 SGD (or
//          --optimizer momentum) steps through
//          the DistributeTranspiler (or locally on the combined batch); the
//          last line is a JSON object of every parameter's values
//   resume --phase 1|2 --model_dir D           a regression through the Fleet
//          PS API (role from the environment); phase 1 saves the servers'
//          tables, phase 2 starts the servers from them; the last line is
//          {"start_eval":…, "end_eval":…}
#include <CLI/CLI.hpp>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>

#include "flotilla/api/layers.h"
#include "flotilla/api/learning_rate_scheduler.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/api/regularizer.h"
#include "flotilla/fleet/distribute_transpiler.h"
#include "flotilla/fleet/fleet.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/io/inference_model.h"
#include "flotilla/ps/trainer_runtime.h"

using namespace flotilla;

namespace {

constexpr int64_t kWide = 1100;  // fc weight 1100 x 16 = 17600 floats: two blocks on two servers
constexpr int64_t kVocab = 20;
constexpr int64_t kGlobalBatch = 8;

struct Args {
  std::string role = "local", pservers, endpoint, model_dir;
  int trainers = 1, trainer_id = 0, steps = 20, phase = 1;
  float lr = 0.05f;
  std::string mode = "sync";  // resume: sync | geo (k_steps 10)
  std::string optimizer = "sgd";  // equal: sgd | momentum (mu 0.9)
  bool schedule = false;          // equal: exponential_decay(lr, 4 steps, 0.5) instead of a constant
  float l2 = 0;                   // equal: > 0, L2 weight decay of this coefficient
};

float Value(int64_t step, int64_t row, int64_t col) {
  return static_cast<float>(std::sin(0.37 * step + 1.3 * row + 0.11 * col));
}

// Rows [begin, end) of step `step`'s global batch.
FeedMap EqualBatch(int64_t step, int64_t begin, int64_t end) {
  int64_t n = end - begin;
  Tensor x(DType::kFloat32, {n, kWide}), ids(DType::kInt64, {n, 1}), y(DType::kFloat32, {n, 1});
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < kWide; ++c) x.data<float>()[r * kWide + c] = Value(step, begin + r, c);
    ids.data<int64_t>()[r] = (step * 3 + begin + r) % kVocab;
    y.data<float>()[r] = Value(step, begin + r, 7) * 2 + 0.5f;
  }
  return {{"x", x}, {"ids", ids}, {"y", y}};
}

std::vector<std::string> Parameters(const Program& p) {
  std::vector<std::string> out;
  for (VarDesc* v : p.global_block().AllVars()) {
    if (v->is_parameter) out.push_back(v->name);
  }
  return out;
}

// Every parameter's values; a trainer reads its sparse tables from the servers.
nlohmann::json Snapshot(const std::vector<std::string>& params, const fleet::DistributeTranspiler* t) {
  nlohmann::json out;
  for (const auto& name : params) {
    Tensor value = global_scope().GetVar(name).GetTensor();
    if (t != nullptr) {
      for (const auto& table : t->tables()) {
        if (table.name != name || !table.sparse) continue;
        std::vector<int64_t> keys(kVocab);
        for (int64_t k = 0; k < kVocab; ++k) keys[k] = k;
        value = ps::RequireTrainerRuntime("snapshot")->client->PullSparse(name, keys);
      }
    }
    out[name] = std::vector<float>(value.data<float>(), value.data<float>() + value.numel());
  }
  return out;
}

int RunEqual(const Args& a) {
  RegisterAllOps();
  Program main, startup;
  ProgramGuard guard(main, startup);
  main.set_random_seed(3);
  startup.set_random_seed(3);
  auto x = layers::data("x", {kWide});
  auto ids = layers::data("ids", {1}, DType::kInt64);
  auto y = layers::data("y", {1});
  // Fixed seeds: a seed-0 initialiser draws fresh values in every process.
  auto attr = [](double a, int seed) {
    ParamAttr p;
    p.initializer = std::make_shared<initializer::Uniform>(-a, a, seed);
    return p;
  };
  auto emb = layers::embedding(ids, {kVocab, 4}, /*is_sparse=*/true, false, -1, attr(0.5, 11));
  // A second table on the same ids: the trainers pull both in one
  // ps_prefetch_sparse.
  auto emb2 = layers::embedding(ids, {kVocab, 2}, /*is_sparse=*/true, false, -1, attr(0.5, 16));
  auto h = layers::fc(std::vector<Variable>{x, emb, emb2}, 16, 1, attr(0.05, 12), attr(0.1, 13), "tanh");
  auto loss = layers::mean(layers::square_error_cost(layers::fc(h, 1, 1, attr(0.3, 14), attr(0.1, 15)), y));
  optimizer::LearningRate lr = a.lr;
  if (a.schedule) lr = layers::exponential_decay(a.lr, 4, 0.5f);
  regularizer::RegularizerPtr decay = a.l2 > 0 ? regularizer::L2Decay(a.l2) : nullptr;
  if (a.optimizer == "momentum") {
    optimizer::Momentum(lr, 0.9f, false, decay).minimize(loss);
  } else {
    optimizer::SGD(lr, decay).minimize(loss);
  }
  std::vector<std::string> params = Parameters(main);
  Executor exe(CPUPlace());
  if (a.role == "local") {
    exe.run(startup);
    for (int s = 0; s < a.steps; ++s) exe.run(main, EqualBatch(s, 0, kGlobalBatch));
    std::cout << Snapshot(params, nullptr).dump() << std::endl;
    return 0;
  }
  fleet::DistributeTranspiler t;
  t.transpile(a.trainer_id, a.pservers, a.trainers);
  if (a.role == "pserver") {
    Program ps = t.get_pserver_program(a.endpoint);
    exe.run(t.get_startup_program(a.endpoint, ps));
    exe.run(ps);
    std::cout << "{\"served\":true}" << std::endl;
    return 0;
  }
  exe.run(startup);
  int64_t share = kGlobalBatch / a.trainers;
  for (int s = 0; s < a.steps; ++s) {
    exe.run(t.get_trainer_program(), EqualBatch(s, a.trainer_id * share, (a.trainer_id + 1) * share));
  }
  nlohmann::json snap = Snapshot(params, &t);
  exe.close();
  std::cout << snap.dump() << std::endl;
  return 0;
}

FeedMap EvalBatch() {
  Tensor x(DType::kFloat32, {64, 13}), y(DType::kFloat32, {64, 1});
  for (int64_t r = 0; r < 64; ++r) {
    float sum = 0;
    for (int64_t c = 0; c < 13; ++c) {
      float v = Value(1000, r, c);
      x.data<float>()[r * 13 + c] = v;
      sum += v * (c % 3 - 1.0f);
    }
    y.data<float>()[r] = sum + 1.0f;
  }
  return {{"x", x}, {"y", y}};
}

float EvalLoss(Executor& exe, const Program& test, const Variable& loss) {
  return exe.run(test, EvalBatch(), {loss.name()})[0].data<float>()[0];
}

// The eval batch's MSE of a saved inference model, loaded into a fresh scope.
float InferenceLoss(Executor& exe, const std::string& dir) {
  Scope scope;
  io::InferenceModel model = io::LoadInferenceModel(dir, scope);
  FeedMap batch = EvalBatch();
  Tensor pred = exe.run(model.program, {{"x", batch["x"]}}, model.fetch_names, &scope)[0];
  double sum = 0;
  for (int64_t i = 0; i < pred.numel(); ++i) {
    double d = pred.data<float>()[i] - batch["y"].data<float>()[i];
    sum += d * d;
  }
  return static_cast<float>(sum / static_cast<double>(pred.numel()));
}

FeedMap RegressionBatch(int64_t step) {
  Tensor x(DType::kFloat32, {16, 13}), y(DType::kFloat32, {16, 1});
  for (int64_t r = 0; r < 16; ++r) {
    float sum = 0;
    for (int64_t c = 0; c < 13; ++c) {
      float v = Value(step, r, c);
      x.data<float>()[r * 13 + c] = v;
      sum += v * (c % 3 - 1.0f);
    }
    y.data<float>()[r] = sum + 1.0f;
  }
  return {{"x", x}, {"y", y}};
}

int RunResume(const Args& a) {
  fleet::PaddleCloudRoleMaker role;
  fleet::init(role);
  Program main, startup;
  ProgramGuard guard(main, startup);
  main.set_random_seed(5);
  startup.set_random_seed(5);
  auto x = layers::data("x", {13});
  auto y = layers::data("y", {1});
  auto pred = layers::fc(x, 1);
  auto loss = layers::mean(layers::square_error_cost(pred, y));
  Program test_clone = main.Clone(true);
  optimizer::SGD sgd(0.05f);
  fleet::DistributedStrategy strategy;
  strategy.set_a_sync(a.mode != "sync");
  if (a.mode == "geo") strategy.Set("a_sync_configs.k_steps", 10);
  fleet::distributed_optimizer(sgd, strategy).minimize(loss);
  if (fleet::is_server()) {
    fleet::init_server(a.phase == 2 ? a.model_dir : "");
    fleet::run_server();
    return 0;
  }
  Executor exe(CPUPlace());
  exe.run(fleet::startup_program());
  fleet::init_worker(/*servers_loaded=*/a.phase == 2);
  Program test = fleet::default_fleet().ps_transpiler()->get_test_program(test_clone);
  float start = EvalLoss(exe, test, loss);
  for (int s = 0; s < a.steps; ++s) exe.run(fleet::main_program(), RegressionBatch(s + a.phase * 1000));
  float end = EvalLoss(exe, test, loss);
  nlohmann::json result = {{"start_eval", start}, {"end_eval", end}};
  if (a.phase == 1) {
    fleet::save_persistables(exe, a.model_dir);
    fleet::save_inference_model(exe, a.model_dir + ".infer", {"x"}, {pred.name()});
    result["infer_eval"] = InferenceLoss(exe, a.model_dir + ".infer");
  }
  fleet::stop_worker();
  std::cout << result.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"parameter-server integration test processes"};
  Args a;
  std::string what;
  app.add_option("what", what)->required()->check(CLI::IsMember({"equal", "resume"}));
  app.add_option("--role", a.role);
  app.add_option("--pservers", a.pservers);
  app.add_option("--endpoint", a.endpoint);
  app.add_option("--trainers", a.trainers);
  app.add_option("--trainer_id", a.trainer_id);
  app.add_option("--steps", a.steps);
  app.add_option("--phase", a.phase);
  app.add_option("--lr", a.lr);
  app.add_option("--mode", a.mode);
  app.add_option("--optimizer", a.optimizer)->check(CLI::IsMember({"sgd", "momentum"}));
  app.add_flag("--schedule", a.schedule);
  app.add_option("--l2", a.l2);
  app.add_option("--model_dir", a.model_dir);
  CLI11_PARSE(app, argc, argv);
  try {
    return what == "equal" ? RunEqual(a) : RunResume(a);
  } catch (const std::exception& e) {
    std::cerr << "ps_integration_worker: " << e.what() << std::endl;
    return 1;
  }
}
