// Paddle's fit_a_line: linear regression of Boston house prices.
//
//   y_predict = fc(x, 1); loss = mean(square_error_cost(y_predict, y))
//   SGD(0.001), batch 20, shuffled with a 500-sample buffer.
//
// Prints the training MSE as it goes and, as its last line, a JSON object:
//   {"test_mse":…, "train_mse":…, "epochs":…, "samples_per_sec":…}
// With --model_dir, saves an inference model (x → y_predict) there.
#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "example_main.h"
#include "fit_a_line_flags.h"
#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/io/data_feeder.h"
#include "flotilla/io/datasets/uci_housing.h"
#include "flotilla/io/evaluate.h"
#include "flotilla/io/inference_model.h"
#include "flotilla/io/reader.h"

using namespace flotilla;

namespace {

struct Flags : flotilla::examples::FitALineFlags {
  std::string model_dir;
};

int Run(const Flags& flags) {
  RegisterAllOps();
  Program main, startup;
  ProgramGuard guard(main, startup);
  main.set_random_seed(flags.seed);
  startup.set_random_seed(flags.seed);

  auto x = layers::data("x", {13});
  auto y = layers::data("y", {1});
  auto y_predict = layers::fc(x, 1);
  auto loss = layers::mean(layers::square_error_cost(y_predict, y));
  Program test_program = main.Clone(/*for_test=*/true);
  optimizer::SGD(flags.lr).minimize(loss);

  Executor exe(CPUPlace());
  exe.run(startup);
  io::DataFeeder feeder({x, y});
  auto train = io::Batch(io::Shuffle(io::uci_housing::Train(), 500, flags.seed), flags.batch_size);
  auto train_eval = io::Batch(io::uci_housing::Train(), flags.batch_size);
  auto test = io::Batch(io::uci_housing::Test(), flags.batch_size);

  int64_t samples = 0;
  auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < flags.epochs; ++epoch) {
    auto next = train();
    while (auto batch = next()) {
      exe.run(main, feeder.Feed(*batch), {loss.name()});
      samples += static_cast<int64_t>(batch->size());
    }
    if ((epoch + 1) % 10 == 0 || epoch + 1 == flags.epochs) {
      std::cout << "epoch " << epoch + 1 << " train_mse "
                << io::EvaluateMean(exe, test_program, feeder, train_eval, loss.name()) << std::endl;
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!flags.model_dir.empty()) {
    io::SaveInferenceModel(flags.model_dir, {"x"}, {y_predict.name()}, exe, main, global_scope());
    std::cout << "saved inference model to " << flags.model_dir << std::endl;
  }
  nlohmann::json result = {{"test_mse", io::EvaluateMean(exe, test_program, feeder, test, loss.name())},
                           {"train_mse", io::EvaluateMean(exe, test_program, feeder, train_eval, loss.name())},
                           {"epochs", flags.epochs},
                           {"samples_per_sec", secs > 0 ? samples / secs : 0.0}};
  std::cout << result.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fit_a_line: Paddle's linear regression on UCI housing"};
  Flags flags;
  flotilla::examples::AddFitALineFlags(app, flags);
  app.add_option("--model_dir", flags.model_dir, "save an inference model here");
  CLI11_PARSE(app, argc, argv);
  return flotilla::examples::RunExample("fit_a_line", [&] { return Run(flags); });
}
