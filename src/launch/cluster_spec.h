// ClusterSpec: the world a launcher starts — every process of the job on
// every node, with its role, rank, endpoint and devices — and which node this
// launcher is. A rendezvous step produces it (see rendezvous.h); the
// supervisor only starts and watches the processes of this node. Plain
// values: copyable, no behaviour beyond lookups.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flotilla/launch/options.h"

namespace flotilla::launch {

// kHeterWorker: the dense-part workers of a heterogeneous PS job.
enum class Role { kTrainer, kServer, kHeterWorker };

// "trainer" / "server" / "heter_worker".
const char* RoleName(Role role);

struct ProcessSpec {
  Role role = Role::kTrainer;
  int id = 0;          // global rank (trainers), server or heter worker index
  int node = 0;        // index of the node that runs it
  int local_rank = 0;  // index among the node's processes of the same role
  std::string host;
  int port = 0;        // 0 until the port is reserved
  std::vector<std::string> devices;  // collective: device ids or CPU slots

  std::string endpoint() const;
  // "workerlog.3" / "serverlog.1" / "heterlog.0".
  std::string log_name() const;
  // "rank 3" / "server 1" / "heter worker 0".
  std::string label() const;
};

struct ClusterSpec {
  RunMode mode = RunMode::kCollective;
  std::vector<std::string> nodes;      // node hosts; index = node index
  int node_index = 0;                  // this launcher's node
  std::string master;                  // rendezvous store host:port
  std::string job_id;                  // --job_id; "" = unnamed
  int64_t generation = -1;             // elastic jobs: which world (0, 1, ...); -1 = fixed
  std::vector<ProcessSpec> trainers;   // ordered by rank
  std::vector<ProcessSpec> servers;    // ordered by server id (ps mode)
  std::vector<ProcessSpec> heter_workers;  // ordered by id (heterogeneous ps jobs)

  // This node's processes: servers first, then heter workers, then
  // trainers, each by id.
  std::vector<ProcessSpec> LocalProcesses() const;
  int LocalTrainerCount() const;
  std::vector<std::string> TrainerEndpoints() const;
  std::vector<std::string> ServerEndpoints() const;
  std::vector<std::string> HeterEndpoints() const;
};

}  // namespace flotilla::launch
