// A multi-layer perceptron classifier (Paddle's fleet example model).
//
//   fc 1280 tanh → fc 1280 tanh → fc 2 softmax → cross_entropy → mean
//   SGD(0.01), batch 128, 32 input features
//
// Trains on a synthetic, learnable set; prints the loss as it goes and, as
// its last line, {"loss":…, "accuracy":…, "steps_per_sec":…} where accuracy
// is measured on held-out samples. With --model_dir, saves an inference model.
#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "example_main.h"
#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/io/data_feeder.h"
#include "flotilla/io/datasets/synthetic.h"
#include "flotilla/io/evaluate.h"
#include "flotilla/io/inference_model.h"
#include "flotilla/io/reader.h"

using namespace flotilla;

namespace {

struct Flags {
  int steps = 400;
  int epochs = 0;  // 0: run --steps steps
  int batch_size = 128;
  float lr = 0.01f;
  int hidden = 1280;
  std::string model_dir;
  uint64_t seed = 1;
};

struct Model {
  Variable x, y, prediction, loss, accuracy;
};

Model BuildMlp(int hidden) {
  Model m;
  m.x = layers::data("x", {32});
  m.y = layers::data("y", {1}, DType::kInt64);
  auto fc1 = layers::fc(m.x, hidden, 1, {}, {}, "tanh");
  auto fc2 = layers::fc(fc1, hidden, 1, {}, {}, "tanh");
  m.prediction = layers::fc(fc2, 2, 1, {}, {}, "softmax");
  m.loss = layers::mean(layers::cross_entropy(m.prediction, m.y));
  m.accuracy = layers::accuracy(m.prediction, m.y);
  return m;
}

int Run(const Flags& flags) {
  RegisterAllOps();
  Program main, startup;
  ProgramGuard guard(main, startup);
  main.set_random_seed(flags.seed);
  startup.set_random_seed(flags.seed);
  Model m = BuildMlp(flags.hidden);
  Program test_program = main.Clone(/*for_test=*/true);
  optimizer::SGD(flags.lr).minimize(m.loss);

  Executor exe(CPUPlace());
  exe.run(startup);
  io::DataFeeder feeder({m.x, m.y});
  auto data = io::synthetic::Classification(20000, 32, 2, flags.seed);
  auto train = io::Batch(io::Shuffle(data.train, 4096, flags.seed), flags.batch_size, true);
  auto test = io::Batch(data.test, 512);

  int64_t steps_per_epoch = data.train_size / flags.batch_size;
  int64_t total = flags.epochs > 0 ? flags.epochs * steps_per_epoch : flags.steps;
  int64_t step = 0;
  float loss = 0;
  auto start = std::chrono::steady_clock::now();
  while (step < total) {
    auto next = train();
    while (step < total) {
      auto batch = next();
      if (!batch) break;
      loss = exe.run(main, feeder.Feed(*batch), {m.loss.name()})[0].data<float>()[0];
      if (++step % 50 == 0) std::cout << "step " << step << " loss " << loss << std::endl;
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!flags.model_dir.empty()) {
    io::SaveInferenceModel(flags.model_dir, {"x"}, {m.prediction.name()}, exe, main, global_scope());
    std::cout << "saved inference model to " << flags.model_dir << std::endl;
  }
  nlohmann::json result = {{"loss", loss},
                           {"accuracy", io::EvaluateMean(exe, test_program, feeder, test, m.accuracy.name())},
                           {"steps", step},
                           {"steps_per_sec", secs > 0 ? step / secs : 0.0}};
  std::cout << result.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mlp: a multi-layer perceptron on a synthetic classification set"};
  Flags flags;
  app.add_option("--steps", flags.steps, "training steps (when --epochs is 0)")->check(CLI::PositiveNumber);
  app.add_option("--epochs", flags.epochs, "passes over the training set (overrides --steps)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--batch_size", flags.batch_size, "samples per step")->check(CLI::PositiveNumber);
  app.add_option("--lr", flags.lr, "SGD learning rate")->check(CLI::PositiveNumber);
  app.add_option("--hidden", flags.hidden, "width of the two hidden layers")->check(CLI::PositiveNumber);
  app.add_option("--model_dir", flags.model_dir, "save an inference model here");
  app.add_option("--seed", flags.seed, "random seed");
  CLI11_PARSE(app, argc, argv);
  return flotilla::examples::RunExample("mlp", [&] { return Run(flags); });
}
