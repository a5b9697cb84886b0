// JobObserver: the launcher's side of observability (docs/observability.md).
//
//  - every child gets its label, flight-recorder and metrics directories,
//    and with --timeline its own timeline file, step window and size bound
//    (ChildEnv);
//  - the launcher traces itself ("launcher <node>") and, on node 0, answers
//    the children's clock measurements (comm::ClockResponder);
//  - job_status.json in the log dir follows every process's state;
//  - a stall marker from any child (FLOTILLA_STALL_TIMEOUT) stops the job
//    when --stall_timeout is set; before a job is stopped every child is
//    asked (SIGUSR1) to dump its flight recorder and the doctor's diagnosis
//    goes into the ABORT report;
//  - /metrics, /healthz, /readyz (JobHealth) and the dashboard
//    (--dashboard, --metrics_port) are served from the launcher;
//  - at the end the per-process timelines are merged into --timeline.
// One observer per Launch; not thread-safe except where noted.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "flotilla/launch/options.h"
#include "flotilla/launch/signals.h"
#include "launch/cluster_spec.h"
#include "launch/env_contract.h"
#include "launch/job_health.h"
#include "launch/supervisor.h"

namespace flotilla::comm {
class ClockResponder;
}
namespace flotilla::trace {
class HttpServer;
}

namespace flotilla::launch {

class JobObserver {
 public:
  // Clears the previous run's dumps and metrics in the log dir, starts the
  // HTTP endpoint when asked. Throws InvalidArgument for bad observability
  // options, Unavailable when the dashboard's port cannot be bound.
  explicit JobObserver(const LaunchOptions& options);
  ~JobObserver();
  JobObserver(const JobObserver&) = delete;
  JobObserver& operator=(const JobObserver&) = delete;

  // A world was agreed: name this launcher, start its timeline, answer or
  // measure clocks.
  void OnWorld(const ClusterSpec& spec);
  // The job goes on in a new world (an elastic membership change).
  void OnRestart(int exit_code);
  // What process `p` needs in its environment.
  EnvList ChildEnv(const ProcessSpec& p) const;
  // The hooks a run gives the supervisor.
  SupervisorHooks Hooks();
  // The processes are gone: merges the timeline (--timeline). Prints where
  // it went to stderr.
  void Finish();
  // Keeps the dashboard up for --dashboard_linger, or until SIGINT, SIGTERM
  // or SIGHUP arrives on `signals`.
  void Linger(SignalFd& signals);

  std::string flight_dir() const { return log_dir_ + "/flight"; }
  std::string metrics_dir() const { return log_dir_ + "/metrics"; }
  std::string timeline_dir() const { return log_dir_ + "/timeline"; }

 private:
  // The launcher's /metrics, /healthz, /readyz and dashboard.
  void StartHttp();
  void WriteStatus(const std::vector<ProcessView>& views);
  std::optional<std::string> Stalled();
  std::string Diagnose(const std::vector<ProcessView>& views);
  void CollectDumps(const std::vector<ProcessView>& views);

  LaunchOptions options_;
  std::string log_dir_;  // absolute
  JobHealth health_;     // asked by the HTTP server's threads
  std::unique_ptr<comm::ClockResponder> clock_;
  std::unique_ptr<trace::HttpServer> http_;
  std::chrono::steady_clock::time_point next_stall_check_{};
  bool timeline_started_ = false;
  std::set<std::string> seen_stopped_;  // labels once seen stopped
};

}  // namespace flotilla::launch
