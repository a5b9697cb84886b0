#include "comm_test_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace flotilla::comm::testing {

std::string RankProcess::Output() const {
  std::ifstream in(log);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string HelperPath() {
  if (const char* dir = std::getenv("FLOTILLA_BUILD_DIR")) {
    return std::string(dir) + "/tests/comm_rank_helper";
  }
  // The helper is built beside the test binaries.
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / "comm_rank_helper";
}

RankProcess Start(const std::vector<std::string>& argv, const std::string& log) {
  RankProcess p;
  p.log = log;
  p.pid = fork();
  if (p.pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  return p;
}

bool WaitFor(RankProcess& p, std::chrono::milliseconds limit) {
  if (p.pid < 0) return true;
  auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (waitpid(p.pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(p.pid, SIGKILL);
      waitpid(p.pid, &status, 0);
      p.pid = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  p.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  p.pid = -1;
  return true;
}

void KillAll(std::vector<RankProcess>& ps) {
  for (auto& p : ps) {
    if (p.pid > 0) {
      kill(p.pid, SIGKILL);
      waitpid(p.pid, nullptr, 0);
      p.pid = -1;
    }
  }
}

}  // namespace flotilla::comm::testing
