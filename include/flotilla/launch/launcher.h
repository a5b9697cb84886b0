// flotilla::launch::Launch — the whole `flotilla launch` run:
//
//   options ─SelectRunMode─▶ Rendezvous::Join ─(layout)─▶ planner: PlanNode + reserve ports
//     ─▶ World (ClusterSpec + JobChannel) ─Supervisor::Run─▶ RunResult
//     ─▶ ABORT report, exit code
//
// The rendezvous (static, --master, or elastic with etcd and --np) follows
// from the options; the supervisor can run again with a new world.
#pragma once

#include "flotilla/launch/options.h"

namespace flotilla::launch {

// Runs the job and returns the launcher's exit code: 0 when every process
// succeeded (ps: every trainer; the servers are then stopped), else the
// first failure's code (exit code, or 128 + signal), 128 + signal when the
// launcher itself was stopped by one. Messages (configuration, ABORT report)
// go to stderr; the relayed process's output to stdout. Throws
// flotilla::Error for bad options or a failed rendezvous, before any process
// starts. Call BlockLauncherSignals() first, before any thread exists.
int Launch(LaunchOptions options);

// Removes this process's own FLOTILLA_* trace settings from the environment
// (they describe a traced child, not the launcher). Call in main() before
// any thread starts.
void ClearLauncherTraceEnv();

}  // namespace flotilla::launch
