// Runs io_inference_helper (testing/inference_helper.cc) in a process of its
// own, for tests that serve a saved inference model with nothing in memory.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "flotilla/testing/process.h"

namespace flotilla::io::testing {

// io_inference_helper, built beside the test binaries.
inline std::string InferenceHelperPath() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "io_inference_helper")
      .string();
}

// Feeds `inputs` (SaveTensor files) to the model in `model_dir` and writes
// its fetch targets to `out_dir`/fetch_<i>.tensor. Blocks until the helper
// exits; returns its exit code. Throws DeadlineExceeded when it runs longer
// than `timeout` (it is killed then).
inline int RunInferenceHelper(const std::string& model_dir, const std::string& out_dir,
                              const std::vector<std::string>& inputs,
                              std::chrono::seconds timeout = std::chrono::seconds(120)) {
  std::vector<std::string> argv{InferenceHelperPath(), model_dir, out_dir};
  argv.insert(argv.end(), inputs.begin(), inputs.end());
  return flotilla::testing::Process({std::move(argv)}).Finish(timeout);
}

}  // namespace flotilla::io::testing
