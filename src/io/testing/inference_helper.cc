// Runs a saved inference model in a process of its own:
//   io_inference_helper <model_dir> <out_dir> <input.tensor>...
// feeds input i (SaveTensor files) to feed name i, runs the program and
// writes fetch target i to <out_dir>/fetch_<i>.tensor. Exit status 0 on
// success; 1 with the error on stderr otherwise.
#include <iostream>
#include <string>

#include "flotilla/common/error.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/io/checkpoint.h"
#include "flotilla/io/inference_model.h"

int main(int argc, char** argv) {
  using namespace flotilla;
  if (argc < 3) {
    std::cerr << "usage: io_inference_helper <model_dir> <out_dir> <input.tensor>...\n";
    return 2;
  }
  try {
    RegisterAllOps();
    Scope scope;
    io::InferenceModel model = io::LoadInferenceModel(argv[1], scope);
    FeedMap feed;
    for (size_t i = 0; i < model.feed_names.size() && int(i) + 3 < argc; ++i) {
      feed[model.feed_names[i]] = io::LoadTensor(argv[i + 3]);
    }
    Executor exe;
    std::vector<Tensor> out = exe.Run(model.program, feed, model.fetch_names, &scope);
    for (size_t i = 0; i < out.size(); ++i) {
      io::SaveTensor(std::string(argv[2]) + "/fetch_" + std::to_string(i) + ".tensor", out[i]);
    }
  } catch (const Error& e) {
    std::cerr << ErrorCodeName(e.code()) << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
