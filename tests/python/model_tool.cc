// py_model_tool: the C++ side of the Python package's interchange tests —
// models and checkpoints written by Python must load in C++ and back.
//
//   py_model_tool infer DIR            loads an inference model, runs it on a
//                                      fixed input, prints {"fetch": [...]}
//   py_model_tool save_model DIR       builds fit_a_line's network (seeded),
//                                      saves an inference model, prints its
//                                      output on the fixed input
//   py_model_tool load_params DIR      builds fit_a_line's network, loads the
//                                      persistables in DIR, prints them
//   py_model_tool save_params DIR      builds fit_a_line's network (seeded),
//                                      saves its persistables, prints them
//
// The fixed input of a feed variable [-1, n] is 4 rows with x[i][j] =
// 0.1·i + 0.01·j. Output: one JSON object on stdout.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/io/checkpoint.h"
#include "flotilla/io/inference_model.h"

using namespace flotilla;

namespace {

Tensor FixedInput(const VarDesc& var) {
  int64_t n = var.shape.back();
  Tensor t(DType::kFloat32, {4, n});
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < n; ++j) p[i * n + j] = 0.1f * i + 0.01f * j;
  }
  return t;
}

nlohmann::json Values(const Tensor& t) {
  nlohmann::json out = nlohmann::json::array();
  for (float v : t.ToVector<float>()) out.push_back(v);
  return out;
}

nlohmann::json RunFixed(Executor& exe, const Program& program, const std::vector<std::string>& feeds,
                        const std::vector<std::string>& fetches) {
  FeedMap feed;
  for (const std::string& name : feeds) feed[name] = FixedInput(program.global_block().Var(name));
  nlohmann::json out = nlohmann::json::array();
  for (const Tensor& t : exe.Run(program, feed, fetches)) out.push_back(Values(t));
  return out;
}

// fit_a_line's network (seed 000) with its optimizer, named as Python names it.
struct Net {
  Program main, startup;
  Variable x, y_predict;
  Net() {
    UniqueNameGuard names;
    ProgramGuard guard(main, startup);
    main.set_random_seed(7);
    startup.set_random_seed(7);
    x = layers::data("x", {13});
    auto y = layers::data("y", {1});
    y_predict = layers::fc(x, 1);
    optimizer::SGD(0.001f).minimize(layers::mean(layers::square_error_cost(y_predict, y)));
  }
};

nlohmann::json Persistables(const Program& program) {
  nlohmann::json out = nlohmann::json::object();
  for (const std::string& name : io::PersistableNames(program)) {
    out[name] = Values(global_scope().GetVar(name).GetTensor());
  }
  return out;
}

int Main(const std::string& command, const std::string& dir) {
  RegisterAllOps();
  Executor exe(CPUPlace());
  nlohmann::json result;
  if (command == "infer") {
    io::InferenceModel model = io::LoadInferenceModel(dir, global_scope());
    result["fetch"] = RunFixed(exe, model.program, model.feed_names, model.fetch_names);
  } else if (command == "save_model") {
    Net net;
    exe.Run(net.startup);
    io::SaveInferenceModel(dir, {"x"}, {net.y_predict.name()}, exe, net.main, global_scope());
    Program test = net.main.Clone(/*for_test=*/true).Prune({net.y_predict.name()});
    result["fetch"] = RunFixed(exe, test, {"x"}, {net.y_predict.name()});
  } else if (command == "load_params") {
    Net net;
    io::LoadPersistables(dir, net.main, global_scope());
    result["params"] = Persistables(net.main);
  } else if (command == "save_params") {
    Net net;
    exe.Run(net.startup);
    io::SavePersistables(dir, net.main, global_scope());
    result["params"] = Persistables(net.main);
  } else {
    std::cerr << "py_model_tool: unknown command '" << command << "'\n";
    return 2;
  }
  std::cout << result.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: py_model_tool infer|save_model|load_params|save_params DIR\n";
    return 2;
  }
  try {
    return Main(argv[1], argv[2]);
  } catch (const std::exception& e) {
    std::cerr << "py_model_tool: " << e.what() << "\n";
    return 1;
  }
}
