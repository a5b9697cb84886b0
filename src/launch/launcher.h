// flotilla::launch::Launch — the whole `flotilla launch` run:
//
//   options ─SelectRunMode─▶ Rendezvous::Join ─(layout)─▶ planner: PlanNode + reserve ports
//     ─▶ World (ClusterSpec + JobChannel) ─Supervisor::Run─▶ RunResult
//     ─▶ ABORT report, exit code
//
// The rendezvous is injected so an elastic one (etcd, --np) can replace the
// static one; the supervisor can run again with a new world.
#pragma once

#include <functional>
#include <memory>

#include "launch/options.h"
#include "launch/rendezvous.h"

namespace flotilla::launch {

using RendezvousFactory = std::function<std::unique_ptr<Rendezvous>(const LaunchOptions&)>;

// Runs the job and returns the launcher's exit code: 0 when every process
// succeeded (ps: every trainer; the servers are then stopped), else the
// first failure's code (exit code, or 128 + signal), 128 + signal when the
// launcher itself was stopped by one. Messages (configuration, ABORT report)
// go to stderr; the relayed process's output to stdout. Throws
// flotilla::Error for bad options or a failed rendezvous, before any process
// starts. Call BlockLauncherSignals() first, before any thread exists.
int Launch(LaunchOptions options, const RendezvousFactory& make_rendezvous = MakeRendezvous);

}  // namespace flotilla::launch
