// Supervisor: starts this node's processes of a world, relays one of them to
// the console, and watches them all until the job ends (the process manager
// and watchdog of the launcher).
//
// The watchdog wakes at once on SIGCHLD and at least every poll_interval
// (≤ 100 ms). When a process fails — exits non-zero or dies by a signal the
// launcher did not send — or the launcher gets SIGINT/SIGTERM/SIGHUP, or
// another node aborts, it sends SIGTERM to every remaining process group
// and SIGKILL once the grace period is over; a second signal to the
// launcher sends SIGKILL at once. In parameter-server mode, once every
// trainer of the job has exited 0 the servers are stopped the same way and
// the run counts as a success. Every process group is SIGKILLed before Run
// returns, so nothing a child started survives it.
//
// Run blocks; one Run at a time. A Supervisor may Run again with a new world
// (the seam for elastic jobs, which restart the processes after the world
// changes).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "launch/cluster_spec.h"
#include "launch/exit_status.h"
#include "launch/rendezvous.h"
#include "launch/signals.h"

namespace flotilla::launch {

struct SupervisorOptions {
  std::string log_dir = "log";
  std::chrono::milliseconds grace_period{5000};
  std::chrono::milliseconds poll_interval{50};
  bool relay_to_console = true;  // stream the first local process's output to stdout
  size_t tail_lines = 20;        // lines of a failed process's log kept for the report
};

struct ProcessOutcome {
  ProcessSpec spec;
  pid_t pid = 0;
  ExitStatus status;
  std::string log_path;
  std::vector<std::string> tail;  // failed processes only
};

struct RunResult {
  int exit_code = 0;
  std::vector<ProcessOutcome> failed;     // in the order they were found
  std::vector<ProcessOutcome> processes;  // every local process, by spawn order
  int launcher_signal = 0;                // the signal that stopped the job, if any
  std::optional<AbortNotice> peer_abort;  // another node's abort that stopped it
};

class Supervisor {
 public:
  // `signals` must outlive the supervisor; BlockLauncherSignals() must have run.
  Supervisor(SupervisorOptions options, SignalFd& signals);

  // Starts `command` once per local process of `spec`, each with its
  // environment from `child_env`, and watches them until all have ended.
  // Throws (after stopping the ones already started) when a process cannot
  // be started.
  RunResult Run(const ClusterSpec& spec, const std::vector<std::string>& command,
                JobChannel& channel, const std::vector<std::vector<std::string>>& child_env);

 private:
  SupervisorOptions options_;
  SignalFd& signals_;
};

}  // namespace flotilla::launch
