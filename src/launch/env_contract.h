// The environment contract (docs/env.md): the variables each child gets,
// Paddle-compatible so existing role makers and cluster tooling work as is.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "launch/cluster_spec.h"

namespace flotilla::launch {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// The contract variables for process `p` of `spec`, in a fixed order.
EnvList ContractEnv(const ClusterSpec& spec, const ProcessSpec& p);

// Every variable name the launcher may set, in any mode; a child's inherited
// copies of these are dropped before its own are added, so a launcher started
// from inside another job does not leak the outer job's roles. Exceptions:
// POD_IP, PADDLE_TRAINERS and PADDLE_PORT, which cluster platforms set for
// the node, are kept unless the child's mode sets them.
const std::vector<std::string>& ContractVariableNames();

// `inherited` ("NAME=value" entries, e.g. environ) without contract
// variables and without the task identity of an engine that started the
// launcher (EngineTaskVariableNames: SLURM_PROCID, RANK, OMPI_COMM_WORLD_RANK,
// ...), followed by `contract`.
std::vector<std::string> ChildEnvironment(const std::vector<std::string>& inherited,
                                          const EnvList& contract);

// Compute threads per child when the launcher's environment leaves them
// open: OMP_NUM_THREADS and OPENBLAS_NUM_THREADS, each unless `inherited`
// sets it, to the user's OMP_NUM_THREADS when set, else to the node's
// cores divided among its `local_processes` (at least 1). Processes sharing
// a node's cores do not each start a thread per core and yield-spin
// against one another.
EnvList ThreadDefaults(const std::vector<std::string>& inherited, int local_processes,
                       int cores);

// This process's environment as "NAME=value" entries.
std::vector<std::string> CurrentEnvironment();

}  // namespace flotilla::launch
