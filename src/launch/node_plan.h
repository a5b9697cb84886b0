// NodePlan: what one node knows from its options alone, before it meets the
// other nodes — the node list, which one it is, its own processes (ports may
// still be 0 = "reserve one") and how big the whole job must be. The
// rendezvous step turns the plans of all nodes into one ClusterSpec.
#pragma once

#include <string>
#include <vector>

#include "flotilla/launch/options.h"
#include "launch/cluster_spec.h"

namespace flotilla::launch {

// Node 0's store port for multi-node jobs when --master_port is not given.
inline constexpr int kDefaultMasterPort = 6070;

struct NodePlan {
  RunMode mode = RunMode::kCollective;
  std::vector<std::string> nodes;
  int node_index = 0;
  std::vector<ProcessSpec> local;  // this node's processes
  int world_trainers = 0;          // trainers in the whole job
  int world_servers = 0;           // servers in the whole job (ps)
  int world_heter_workers = 0;     // heter workers in the whole job (ps)
  std::string master_host;         // node 0's host
  int master_port = 0;             // 0 = any free port (single-node jobs)
};

// How many servers and workers one node of a parameter-server job runs.
struct PsCount {
  int servers = 0;
  int workers = 0;
};

// The nodes of the job and which one this is.
struct NodeLayout {
  std::vector<std::string> nodes;  // node hosts (IPv4); index = node index
  int node_index = 0;
  // Parameter-server jobs whose nodes met at --master: each node's
  // --server_num/--worker_num, index = node. Servers and workers are
  // numbered in node order (node 0's servers first).
  std::vector<PsCount> ps_counts;
};

// The layout the options fix: --ips (collective) or the hosts of
// --servers/--workers (ps), and this node's place in it (--host, or the
// entry that is one of this machine's addresses).
NodeLayout StaticLayout(const LaunchOptions& options, RunMode mode);

// Builds this node's plan in `layout`. Throws InvalidArgument naming the
// option at fault (device list not divisible by --nproc_per_node, this node
// not in --ips, malformed --servers endpoint, ...).
NodePlan PlanNode(const LaunchOptions& options, RunMode mode, const NodeLayout& layout);
// PlanNode in StaticLayout(options, mode).
NodePlan PlanNode(const LaunchOptions& options, RunMode mode);

// Device ids for one node: --devices split, or 0..nproc-1 slots; grouped
// into `nproc` equal groups. Exposed for tests.
std::vector<std::vector<std::string>> DeviceGroups(const LaunchOptions& options);

// Index of this node in `nodes`: the entry equal to `host` when given,
// otherwise the entry that is one of this machine's addresses. Throws
// InvalidArgument listing the nodes and the addresses tried.
int FindNodeIndex(const std::vector<std::string>& nodes, const std::string& host);

}  // namespace flotilla::launch
