#include "launch/node_plan.h"

#include <algorithm>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"
#include "launch/net_util.h"

namespace flotilla::launch {

std::vector<std::vector<std::string>> DeviceGroups(const LaunchOptions& o) {
  std::vector<std::string> devices = Split(o.devices, ',');
  int nproc = o.nproc_per_node;
  FLOTILLA_ENFORCE_GE(nproc, 0, "--nproc_per_node must not be negative");
  if (devices.empty()) {
    // A CPU machine: one slot per process.
    nproc = std::max(nproc, 1);
    for (int i = 0; i < nproc; ++i) devices.push_back(std::to_string(i));
  }
  if (nproc == 0) nproc = static_cast<int>(devices.size());
  FLOTILLA_ENFORCE(devices.size() % nproc == 0, "--devices '", o.devices, "' has ",
                   devices.size(), " entries, which --nproc_per_node=", nproc,
                   " does not divide into equal groups");
  const size_t per = devices.size() / nproc;
  std::vector<std::vector<std::string>> groups(nproc);
  for (size_t i = 0; i < devices.size(); ++i) groups[i / per].push_back(devices[i]);
  return groups;
}

int FindNodeIndex(const std::vector<std::string>& nodes, const std::string& host) {
  if (!host.empty()) {
    auto it = std::find(nodes.begin(), nodes.end(), ResolveIpv4(host, "--host"));
    FLOTILLA_ENFORCE(it != nodes.end(), "this node's address --host/--node_ip '", host,
                     "' is not in the node list [", Join(nodes, ","), "]");
    return static_cast<int>(it - nodes.begin());
  }
  if (nodes.size() == 1) return 0;
  std::vector<std::string> mine = LocalAddresses();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (std::find(mine.begin(), mine.end(), nodes[i]) != mine.end()) return static_cast<int>(i);
  }
  FLOTILLA_THROW(InvalidArgument, "none of this machine's addresses [", Join(mine, ","),
                 "] is in the node list [", Join(nodes, ","),
                 "]; pass this node's address with --host");
}

namespace {

std::vector<std::string> NodeList(const LaunchOptions& o) {
  std::vector<std::string> nodes = Split(o.ips, ',');
  for (auto& n : nodes) n = ResolveIpv4(Trim(n), "--ips");
  if (nodes.empty() || (nodes.size() == 1 && nodes[0] == "127.0.0.1" && !o.host.empty())) {
    nodes = {o.host.empty() ? "127.0.0.1" : ResolveIpv4(o.host, "--host")};
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      FLOTILLA_ENFORCE(nodes[i] != nodes[j], "--ips lists '", nodes[i],
                       "' twice; every node must appear once");
    }
  }
  FLOTILLA_ENFORCE(o.nnodes == 0 || o.nnodes == static_cast<int>(nodes.size()),
                   "--nnodes/PADDLE_NNODES=", o.nnodes, " but --ips lists ", nodes.size(),
                   " nodes [", Join(nodes, ","), "]");
  return nodes;
}

int MasterPort(const LaunchOptions& o, size_t nnodes) {
  if (o.master_port > 0) return o.master_port;
  return nnodes > 1 ? kDefaultMasterPort : 0;
}

NodePlan PlanCollective(const LaunchOptions& o, const NodeLayout& layout) {
  NodePlan plan;
  plan.mode = RunMode::kCollective;
  plan.nodes = layout.nodes;
  plan.node_index = layout.node_index;
  auto groups = DeviceGroups(o);
  const int nproc = static_cast<int>(groups.size());
  for (int local = 0; local < nproc; ++local) {
    ProcessSpec p;
    p.role = Role::kTrainer;
    p.node = plan.node_index;
    p.local_rank = local;
    p.id = plan.node_index * nproc + local;
    p.host = plan.nodes[plan.node_index];
    p.port = o.started_port > 0 ? o.started_port + local : 0;
    p.devices = groups[local];
    plan.local.push_back(p);
  }
  plan.world_trainers = nproc * static_cast<int>(plan.nodes.size());
  plan.master_host = plan.nodes[0];
  plan.master_port = MasterPort(o, plan.nodes.size());
  return plan;
}

struct Endpoint {
  std::string host;
  int port = 0;
};

// "ip:port" or just "ip" (port reserved later).
std::vector<Endpoint> ParseEndpoints(const std::string& list, const char* option) {
  std::vector<Endpoint> out;
  for (const auto& item : Split(list, ',')) {
    std::string s = Trim(item);
    if (s.find(':') == std::string::npos) {
      out.push_back({ResolveIpv4(s, option), 0});
    } else {
      HostPort hp = ParseHostPort(s, option);
      out.push_back({ResolveIpv4(hp.host, option), hp.port});
    }
  }
  return out;
}

void AddNode(std::vector<std::string>& nodes, const std::string& host) {
  if (std::find(nodes.begin(), nodes.end(), host) == nodes.end()) nodes.push_back(host);
}

void AddPsProcesses(NodePlan& plan, Role role, const std::vector<Endpoint>& eps) {
  int local = 0;
  for (size_t i = 0; i < eps.size(); ++i) {
    const int node =
        static_cast<int>(std::find(plan.nodes.begin(), plan.nodes.end(), eps[i].host) -
                         plan.nodes.begin());
    if (node != plan.node_index) continue;
    ProcessSpec p;
    p.role = role;
    p.id = static_cast<int>(i);
    p.node = node;
    p.local_rank = local++;
    p.host = eps[i].host;
    p.port = eps[i].port;
    p.devices = {std::to_string(p.local_rank)};
    plan.local.push_back(p);
  }
}

struct PsEndpoints {
  std::vector<Endpoint> servers, workers, heter_workers;
};

PsEndpoints ReadPsEndpoints(const LaunchOptions& o) {
  PsEndpoints e;
  if (!o.servers.empty() || !o.workers.empty()) {
    FLOTILLA_ENFORCE(!o.servers.empty() && !o.workers.empty(),
                     "parameter-server jobs across nodes need both --servers and --workers");
    e.servers = ParseEndpoints(o.servers, "--servers");
    e.workers = ParseEndpoints(o.workers, "--workers");
    FLOTILLA_ENFORCE(o.heter_worker_num == 0, "--heter_worker_num belongs to one-node "
                     "simulation; across nodes list the heter workers with --heter_workers");
    e.heter_workers = ParseEndpoints(o.heter_workers, "--heter_workers");
  } else {
    // Simulation on one machine: --server_num/--worker_num (Paddle's defaults: 2 and 2).
    const std::string host = o.host.empty() ? "127.0.0.1" : ResolveIpv4(o.host, "--host");
    const int ns = o.server_num > 0 ? o.server_num : 2;
    const int nw = o.worker_num > 0 ? o.worker_num : 2;
    const int port = o.started_port;
    FLOTILLA_ENFORCE(o.heter_workers.empty(), "--heter_workers lists the heter workers of a job "
                     "across nodes (with --servers/--workers); on one node use --heter_worker_num");
    FLOTILLA_ENFORCE_GE(o.heter_worker_num, 0, "--heter_worker_num must not be negative");
    for (int i = 0; i < ns; ++i) e.servers.push_back({host, port > 0 ? port + i : 0});
    for (int i = 0; i < nw; ++i) e.workers.push_back({host, port > 0 ? port + ns + i : 0});
    for (int i = 0; i < o.heter_worker_num; ++i) {
      e.heter_workers.push_back({host, port > 0 ? port + ns + nw + i : 0});
    }
  }
  FLOTILLA_ENFORCE(!e.servers.empty() && !e.workers.empty(),
                   "a parameter-server job needs at least one server and one worker");
  return e;
}

// The nodes of a ps job: the distinct hosts, servers' first, then the
// workers', then the heter workers'.
std::vector<std::string> PsNodes(const PsEndpoints& e) {
  std::vector<std::string> nodes;
  for (const auto& x : e.servers) AddNode(nodes, x.host);
  for (const auto& x : e.workers) AddNode(nodes, x.host);
  for (const auto& x : e.heter_workers) AddNode(nodes, x.host);
  return nodes;
}

NodePlan PlanPs(const LaunchOptions& o, const NodeLayout& layout) {
  const PsEndpoints e = ReadPsEndpoints(o);
  NodePlan plan;
  plan.mode = RunMode::kPs;
  plan.nodes = layout.nodes;
  plan.node_index = layout.node_index;
  FLOTILLA_ENFORCE(plan.nodes == PsNodes(e), "the nodes of a parameter-server job come from "
                   "--servers/--workers/--heter_workers");
  AddPsProcesses(plan, Role::kServer, e.servers);
  AddPsProcesses(plan, Role::kHeterWorker, e.heter_workers);
  AddPsProcesses(plan, Role::kTrainer, e.workers);
  plan.world_servers = static_cast<int>(e.servers.size());
  plan.world_trainers = static_cast<int>(e.workers.size());
  plan.world_heter_workers = static_cast<int>(e.heter_workers.size());
  plan.master_host = plan.nodes[0];
  plan.master_port = o.http_port > 0 ? o.http_port : MasterPort(o, plan.nodes.size());
  return plan;
}

// A parameter-server job whose nodes met at --master: this node's
// --server_num servers and --worker_num workers, numbered after those of
// the nodes before it.
NodePlan PlanPsOnLayout(const NodeLayout& layout) {
  NodePlan plan;
  plan.mode = RunMode::kPs;
  plan.nodes = layout.nodes;
  plan.node_index = layout.node_index;
  int server = 0, worker = 0;
  for (int n = 0; n < static_cast<int>(layout.ps_counts.size()); ++n) {
    const PsCount& c = layout.ps_counts[n];
    for (int i = 0; n == layout.node_index && i < c.servers + c.workers; ++i) {
      ProcessSpec p;
      p.role = i < c.servers ? Role::kServer : Role::kTrainer;
      p.id = i < c.servers ? server + i : worker + i - c.servers;
      p.node = n;
      p.local_rank = i < c.servers ? i : i - c.servers;
      p.host = layout.nodes[n];
      p.devices = {std::to_string(p.local_rank)};
      plan.local.push_back(p);
    }
    server += c.servers;
    worker += c.workers;
  }
  FLOTILLA_ENFORCE(server > 0 && worker > 0, "a parameter-server job needs at least one server "
                   "and one worker; its nodes run ", server, " and ", worker,
                   " (--server_num/--worker_num on each node)");
  plan.world_servers = server;
  plan.world_trainers = worker;
  plan.master_host = plan.nodes[0];
  return plan;
}

}  // namespace

NodeLayout StaticLayout(const LaunchOptions& options, RunMode mode) {
  NodeLayout layout;
  layout.nodes = mode == RunMode::kPs ? PsNodes(ReadPsEndpoints(options)) : NodeList(options);
  layout.node_index =
      FindNodeIndex(layout.nodes, layout.nodes.size() == 1 ? "" : options.host);
  return layout;
}

NodePlan PlanNode(const LaunchOptions& options, RunMode mode, const NodeLayout& layout) {
  FLOTILLA_ENFORCE(!options.command.empty(),
                   "no program to launch: pass it after the options, e.g. "
                   "`flotilla launch --devices 0,1 ./train --lr 0.1`");
  FLOTILLA_ENFORCE(layout.node_index >= 0 &&
                       layout.node_index < static_cast<int>(layout.nodes.size()),
                   "node index ", layout.node_index, " is outside the ", layout.nodes.size(),
                   " nodes");
  if (mode == RunMode::kPs && !layout.ps_counts.empty()) return PlanPsOnLayout(layout);
  return mode == RunMode::kPs ? PlanPs(options, layout) : PlanCollective(options, layout);
}

NodePlan PlanNode(const LaunchOptions& options, RunMode mode) {
  return PlanNode(options, mode, StaticLayout(options, mode));
}

}  // namespace flotilla::launch
