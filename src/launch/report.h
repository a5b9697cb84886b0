// What the launcher prints: the "Configuration Arguments" block and the
// environment table at start, endpoints.log, and the ABORT report.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "flotilla/launch/options.h"
#include "launch/cluster_spec.h"
#include "launch/env_contract.h"
#include "launch/supervisor.h"

namespace flotilla::launch {

// Paddle's block: "-----------  Configuration Arguments -----------", one
// "name: value" line per option, then a rule.
std::string ConfigurationBlock(const LaunchOptions& options, RunMode mode);

// A two-column table of `env` under the title `title`.
std::string EnvTable(const std::string& title, const EnvList& env);

// endpoints.log: "PADDLE_TRAINER_ENDPOINTS:" then one endpoint per line (and
// the servers' list in ps mode).
std::string EndpointsLog(const ClusterSpec& spec);

// The ABORT report, in Paddle launcher's words:
//   ABORT!!! Out of all N trainers, the trainer process with rank=[2,3] was
//   aborted. Please check its log.
// (and its server counterpart), then for each failed process its cause and
// the last lines of its log; a stall's line first when one stopped the job,
// and the doctor's diagnosis last. Empty when nothing failed or stalled.
std::string AbortReport(const ClusterSpec& spec, const RunResult& result);

}  // namespace flotilla::launch
