#include "launch/rendezvous.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"

namespace flotilla::launch {

std::string EncodeProcesses(const std::vector<ProcessSpec>& procs) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : procs) {
    list.push_back({{"role", RoleName(p.role)}, {"id", p.id}, {"node", p.node},
                    {"local_rank", p.local_rank}, {"host", p.host}, {"port", p.port},
                    {"devices", p.devices}});
  }
  return list.dump();
}

std::vector<ProcessSpec> DecodeProcesses(const std::string& text) {
  std::vector<ProcessSpec> out;
  try {
    for (const auto& j : nlohmann::json::parse(text)) {
      ProcessSpec p;
      const std::string role = j.at("role").get<std::string>();
      p.role = role == "server" ? Role::kServer : role == "heter_worker" ? Role::kHeterWorker : Role::kTrainer;
      p.id = j.at("id").get<int>();
      p.node = j.at("node").get<int>();
      p.local_rank = j.at("local_rank").get<int>();
      p.host = j.at("host").get<std::string>();
      p.port = j.at("port").get<int>();
      p.devices = j.at("devices").get<std::vector<std::string>>();
      out.push_back(std::move(p));
    }
  } catch (const nlohmann::json::exception& e) {
    FLOTILLA_THROW(Corruption, "a node published a malformed process list: ", e.what());
  }
  return out;
}

namespace {

void CheckSameSize(const NodePlan& self, const std::vector<std::vector<ProcessSpec>>& nodes) {
  const size_t mine = nodes[self.node_index].size();
  for (size_t i = 0; i < nodes.size(); ++i) {
    FLOTILLA_ENFORCE(nodes[i].size() == mine, "node ", i, " (", self.nodes[i], ") runs ",
                     nodes[i].size(), " processes but node ", self.node_index, " (",
                     self.nodes[self.node_index], ") runs ", mine,
                     "; every node must run the same number (check --devices/--nproc_per_node "
                     "on each node)");
  }
}

// Sorts by id and checks the ids are exactly 0..expected-1.
void CheckIds(std::vector<ProcessSpec>& procs, int expected, const char* what) {
  std::sort(procs.begin(), procs.end(),
            [](const ProcessSpec& a, const ProcessSpec& b) { return a.id < b.id; });
  FLOTILLA_ENFORCE(static_cast<int>(procs.size()) == expected, "the nodes together run ",
                   procs.size(), " ", what, "s but the job needs ", expected,
                   "; do all nodes run the same command with the same --ips/--servers/--workers?");
  for (int i = 0; i < expected; ++i) {
    FLOTILLA_ENFORCE(procs[i].id == i, "no node runs ", what, " ", i,
                     " (or two run the same one); check that all nodes got the same lists");
  }
}

}  // namespace

ClusterSpec MergeNodePlans(const NodePlan& self, const std::vector<std::vector<ProcessSpec>>& nodes) {
  FLOTILLA_ENFORCE_EQ(nodes.size(), self.nodes.size(), "process lists for every node");
  if (self.mode == RunMode::kCollective) CheckSameSize(self, nodes);
  ClusterSpec spec;
  spec.mode = self.mode;
  spec.nodes = self.nodes;
  spec.node_index = self.node_index;
  for (const auto& node : nodes) {
    for (const auto& p : node) {
      (p.role == Role::kServer ? spec.servers : p.role == Role::kHeterWorker ? spec.heter_workers
                                                                              : spec.trainers).push_back(p);
    }
  }
  CheckIds(spec.trainers, self.world_trainers, "trainer");
  CheckIds(spec.servers, self.world_servers, "server");
  CheckIds(spec.heter_workers, self.world_heter_workers, "heter worker");
  return spec;
}

}  // namespace flotilla::launch
