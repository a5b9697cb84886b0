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
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "flotilla/launch/signals.h"
#include "launch/cluster_spec.h"
#include "launch/exit_status.h"
#include "launch/rendezvous.h"

namespace flotilla::launch {

// A local process as the observer of a run sees it.
struct ProcessView {
  ProcessSpec spec;
  pid_t pid = 0;
  bool running = false;
  std::string state;   // "running", "exited" (0 or stopped by us), "failed"
  std::string status;  // "running" or ExitStatus::Describe()
  std::string log_path;
};

// What a run reports to, and asks of, whoever observes the job (the
// launcher's JobObserver; empty functions are skipped). Called on the
// supervisor's thread.
struct SupervisorHooks {
  // After the processes started and after each exit.
  std::function<void(const std::vector<ProcessView>&)> on_status;
  // Polled every loop: a description when the job stalled (it is then
  // stopped with exit code 124), else nullopt. Must return quickly.
  std::function<std::optional<std::string>()> stalled;
  // Before the job is stopped because of a failure or a stall: what went
  // wrong, for the ABORT report (may take a second to collect dumps).
  std::function<std::string(const std::vector<ProcessView>&)> diagnose;
  // Fault tolerance "step": a trainer was lost while others run on (see
  // SupervisorOptions::fault_tolerance_step). `what` describes its end.
  std::function<void(const ProcessSpec&, const std::string& what)> on_lost;
};

struct SupervisorOptions {
  std::string log_dir = "log";
  std::chrono::milliseconds grace_period{5000};
  std::chrono::milliseconds poll_interval{50};
  bool relay_to_console = true;  // stream output to stdout (which processes: tee)
  // Which local processes stream: "" = the first local trainer (else the
  // first server), "all", "none", or a comma list of labels' ids ("0,2" =
  // ranks 0 and 2; "server 1").
  std::string tee;
  // Prefix streamed lines with "[rank N] ": "auto" (when several stream),
  // "always" or "never".
  std::string log_prefix = "auto";
  size_t tail_lines = 20;        // lines of a failed process's log kept for the report
  // --fault_tolerance step: a trainer that fails while another trainer of
  // this node still runs is lost, not a failure: the others are left
  // running (they re-form without it), hooks.on_lost publishes it, and the
  // run succeeds when the remaining processes do.
  bool fault_tolerance_step = false;
  SupervisorHooks hooks;
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
  std::vector<ProcessOutcome> lost;       // trainers lost under fault_tolerance_step
  std::vector<ProcessOutcome> processes;  // every local process, by spawn order
  int launcher_signal = 0;                // the signal that stopped the job, if any
  std::optional<AbortNotice> peer_abort;  // another node's abort that stopped it
  std::string stall;                      // what stalled, when a stall stopped it
  std::string diagnosis;                  // the observer's diagnosis of the abort
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
