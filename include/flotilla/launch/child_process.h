// Starting one child process the way the launcher needs it:
//  - in its own process group, so a signal reaches the child and everything it
//    started, and the terminal's Ctrl-C reaches only the launcher;
//  - with PR_SET_PDEATHSIG(SIGKILL), so it cannot outlive a launcher that dies
//    without cleaning up (even by SIGKILL);
//  - with stdout and stderr on one given descriptor (a log file or a pipe),
//    or stderr on a descriptor of its own;
//  - with the launcher's signal mask and dispositions undone.
// Spawn reports exec failures (no such program, no permission) as errors
// instead of a child that exits 127.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace flotilla::launch {

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is looked up in the child's PATH
  std::vector<std::string> env;   // the child's whole environment, "NAME=value"
  int output_fd = -1;  // becomes the child's stdout and stderr; -1: it keeps this process's
  int error_fd = -1;   // when set, becomes the child's stderr instead of output_fd
};

// Starts the process; returns its pid (also its process-group id). Throws
// NotFound when argv[0] is not an executable file on PATH, Unavailable when
// fork or exec fails. Call from the thread that lives as long as the child
// (PDEATHSIG fires when the forking thread ends). Not thread-safe.
pid_t Spawn(const SpawnOptions& options);

// Sends `signal` to the process group `pgid`; ESRCH (already gone) is fine.
void SignalGroup(pid_t pgid, int signal);

// Resolves `program` like execvp: a name with '/' as is, otherwise the first
// executable PATH entry. Throws NotFound naming the program and PATH.
std::string ResolveProgram(const std::string& program, const std::string& path);

}  // namespace flotilla::launch
