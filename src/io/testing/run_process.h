// Runs a helper program in a process of its own, for tests that need a
// fresh process (an inference model loaded with nothing in memory).
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace flotilla::io::testing {

// Runs `args` (args[0] a path) and waits; kills it by pid when it outlives
// `timeout`. Returns the exit status, -1 when it could not start, -2 when
// killed for time, -3 when a signal ended it.
inline int RunProcess(const std::vector<std::string>& args,
                      std::chrono::seconds timeout = std::chrono::seconds(120)) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return -1;
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -3;
}

// io_inference_helper, built beside the test binaries:
//   io_inference_helper <model_dir> <out_dir> <input.tensor>...
inline std::string InferenceHelperPath() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "io_inference_helper")
      .string();
}

}  // namespace flotilla::io::testing
