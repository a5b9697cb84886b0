#include "comm_test_util.h"

#include <cstdlib>
#include <filesystem>
#include <utility>

namespace flotilla::comm {

std::string RankHelperPath() {
  if (const char* dir = std::getenv("FLOTILLA_BUILD_DIR")) {
    return std::string(dir) + "/tests/comm_rank_helper";
  }
  // The helper is built beside the test binaries.
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / "comm_rank_helper";
}

testing::Process StartRank(std::vector<std::string> argv, std::string name) {
  testing::ProcessOptions o;
  o.argv = std::move(argv);
  o.name = std::move(name);
  o.stdout_to = testing::Output::kCapture;
  o.stderr_to = testing::Output::kStdout;
  return testing::Process(std::move(o));
}

}  // namespace flotilla::comm
