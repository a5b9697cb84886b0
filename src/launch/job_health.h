// JobHealth: what the launcher's HTTP endpoint answers to Kubernetes-style
// probes (served with /metrics when --metrics_port or --dashboard is set).
//
//   /healthz (liveness)   200 "ok" while the job makes progress; 503 naming
//                         the stuck rank or server once one of them reported
//                         a stall (a collective or parameter-server call
//                         pending past FLOTILLA_STALL_TIMEOUT, 60 s unless
//                         --stall_timeout says otherwise).
//   /readyz  (readiness)  200 while every process of this node runs; 503
//                         with the reason otherwise: joining the job
//                         (rendezvous), restarting after a membership
//                         change, or which process exited or failed.
//
// Thread-safe: the launcher's thread reports, the server's threads ask.
#pragma once

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "launch/supervisor.h"

namespace flotilla::launch {

class JobHealth {
 public:
  // `flight_dir`: where children leave their stall markers.
  explicit JobHealth(std::string flight_dir);

  // The launcher (re)joins the job: not ready until its processes start.
  void Joining(const std::string& why);
  // The processes' states after they started and after each exit.
  void Status(const std::vector<ProcessView>& views);

  // {healthy, text} for /healthz and /readyz.
  std::pair<bool, std::string> Live() const;
  std::pair<bool, std::string> Ready() const;

 private:
  const std::string flight_dir_;
  mutable std::mutex mu_;
  std::string not_ready_ = "joining the job (rendezvous)";  // "" = ready; guarded by mu_
  size_t running_ = 0;                                      // guarded by mu_
};

// The first stall marker a child left in `flight_dir` ("rank 2: allreduce
// #17 ... pending for 3095 ms"), or "" when none did.
std::string FirstStallMarker(const std::string& flight_dir);

}  // namespace flotilla::launch
