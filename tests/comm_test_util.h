// Process plumbing for the comm multi-process tests: start a rank helper
// with its output in a file, wait with a deadline, kill by pid.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace flotilla::comm::testing {

struct RankProcess {
  pid_t pid = -1;
  std::string log;  // stdout+stderr file
  int exit_code = -1;
  std::string Output() const;
};

// Path of comm_rank_helper in the build tree.
std::string HelperPath();
// Starts argv[0] with argv; output goes to `log`.
RankProcess Start(const std::vector<std::string>& argv, const std::string& log);
// Waits up to `limit` for the process; kills it (by pid) and returns false
// when it is still running then.
bool WaitFor(RankProcess& p, std::chrono::milliseconds limit);
// Kills (SIGKILL) and reaps every process still running.
void KillAll(std::vector<RankProcess>& ps);

}  // namespace flotilla::comm::testing
