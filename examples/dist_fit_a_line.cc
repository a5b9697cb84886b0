// Paddle's fit_a_line in C++, trained by parameter servers through the
// classic DistributeTranspiler.
//
// Every process runs this same program; its role comes from the
// environment, either the classic transpiler's variables
//   PADDLE_TRAINING_ROLE=PSERVER|TRAINER  PADDLE_PSERVER_IPS=ip,ip
//   PADDLE_PSERVER_PORT=6174  PADDLE_TRAINERS=2  PADDLE_CURRENT_IP=ip
//   PADDLE_TRAINER_ID=0
// or those of `flotilla launch --server_num 2 --worker_num 2` (which sets
// both; PADDLE_PSERVERS_IP_PORT_LIST wins, as it carries a port per server).
//
// A trainer prints its loss as it goes and, as its last line, a JSON object
//   {"role":"trainer","trainer_id":…,"mode":…,"test_mse":…,"train_mse":…,"samples_per_sec":…}
// a server {"role":"pserver","endpoint":…}.
#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "example_main.h"
#include "fit_a_line_flags.h"
#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/env.h"
#include "flotilla/common/strings.h"
#include "flotilla/fleet/distribute_transpiler.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/io/data_feeder.h"
#include "flotilla/io/datasets/uci_housing.h"
#include "flotilla/io/evaluate.h"
#include "flotilla/io/reader.h"

using namespace flotilla;

namespace {

struct Flags : flotilla::examples::FitALineFlags {
  std::string mode = "sync";
  int k_steps = 100;
};

struct Cluster {
  std::string role;              // PSERVER | TRAINER
  std::string pservers;          // "ip:port,ip:port"
  std::string current_endpoint;  // servers
  int trainers = 1;
  int trainer_id = 0;
};

std::string EnvEither(const char* a, const char* b) {
  if (auto v = env::Get(a)) return *v;
  return env::Require(b, "the parameter-server role (the classic transpiler's PADDLE_TRAINING_ROLE "
                         "variables or flotilla launch's)");
}

Cluster ReadCluster() {
  Cluster c;
  c.role = EnvEither("PADDLE_TRAINING_ROLE", "TRAINING_ROLE");
  c.trainers = static_cast<int>(ParseInt(EnvEither("PADDLE_TRAINERS", "PADDLE_TRAINERS_NUM"), "PADDLE_TRAINERS"));
  if (auto list = env::Get("PADDLE_PSERVERS_IP_PORT_LIST")) {
    c.pservers = *list;
    if (c.role == "PSERVER") c.current_endpoint = env::Require("POD_IP") + ":" + env::Require("PADDLE_PORT");
  } else {
    std::string port = env::GetOr("PADDLE_PSERVER_PORT", "6174");
    std::vector<std::string> eps;
    for (const auto& ip : Split(env::Require("PADDLE_PSERVER_IPS"), ',')) eps.push_back(ip + ":" + port);
    c.pservers = Join(eps, ",");
    if (c.role == "PSERVER") c.current_endpoint = env::Require("PADDLE_CURRENT_IP") + ":" + port;
  }
  if (c.role == "TRAINER") c.trainer_id = static_cast<int>(env::GetInt("PADDLE_TRAINER_ID", 0));
  FLOTILLA_CHECK(c.role == "PSERVER" || c.role == "TRAINER", InvalidArgument,
                 "PADDLE_TRAINING_ROLE should be one of [TRAINER, PSERVER], got '", c.role, "'");
  return c;
}

int RunServer(fleet::DistributeTranspiler& t, const Cluster& c) {
  Executor exe(CPUPlace());
  Program pserver = t.get_pserver_program(c.current_endpoint);
  Program startup = t.get_startup_program(c.current_endpoint, pserver);
  exe.run(startup);
  exe.run(pserver);  // returns once every trainer called exe.close()
  std::cout << nlohmann::json{{"role", "pserver"}, {"endpoint", c.current_endpoint}}.dump() << std::endl;
  return 0;
}

int Run(const Flags& flags) {
  Cluster c = ReadCluster();
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

  fleet::DistributeTranspilerConfig config;
  config.mode = flags.mode;
  config.geo_k_steps = flags.k_steps;
  fleet::DistributeTranspiler t(config);
  t.transpile(c.trainer_id, c.pservers, c.trainers, flags.mode == "sync");
  if (c.role == "PSERVER") return RunServer(t, c);

  Executor exe(CPUPlace());
  exe.run(startup);
  Program& trainer = t.get_trainer_program();
  io::DataFeeder feeder({x, y});
  auto train = io::Batch(io::Shuffle(io::uci_housing::Train(), 500, flags.seed + c.trainer_id),
                         flags.batch_size);
  int64_t samples = 0;
  auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < flags.epochs; ++epoch) {
    auto next = train();
    for (int batch_id = 0; auto batch = next(); ++batch_id) {
      auto out = exe.run(trainer, feeder.Feed(*batch), {loss.name()});
      samples += static_cast<int64_t>(batch->size());
      if ((batch_id + 1) % 10 == 0 && (epoch + 1) % 10 == 0) {
        std::cout << "Epoch: " << epoch << ", Batch: " << batch_id
                  << ", loss: " << out[0].data<float>()[0] << std::endl;
      }
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json result = {
      {"role", "trainer"}, {"trainer_id", c.trainer_id}, {"mode", flags.mode},
      {"test_mse", io::EvaluateMean(exe, test_program, feeder, io::Batch(io::uci_housing::Test(), 20), loss.name())},
      {"train_mse", io::EvaluateMean(exe, test_program, feeder, io::Batch(io::uci_housing::Train(), 20), loss.name())},
      {"samples_per_sec", secs > 0 ? samples / secs : 0.0}};
  exe.close();  // tells every pserver this trainer is done
  std::cout << result.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dist_fit_a_line: Paddle's fit_a_line linear regression on parameter servers"};
  Flags flags;
  flotilla::examples::AddFitALineFlags(app, flags);
  app.add_option("--mode", flags.mode, "sync | async | geo")->check(CLI::IsMember({"sync", "async", "geo"}));
  app.add_option("--k_steps", flags.k_steps, "GEO: local steps between syncs")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  return flotilla::examples::RunExample("dist_fit_a_line", [&] { return Run(flags); });
}
