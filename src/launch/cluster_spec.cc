#include "launch/cluster_spec.h"

#include "flotilla/common/enforce.h"

namespace flotilla::launch {

const char* RoleName(Role role) {
  switch (role) {
    case Role::kServer: return "server";
    case Role::kHeterWorker: return "heter_worker";
    case Role::kTrainer: break;
  }
  return "trainer";
}

std::string ProcessSpec::endpoint() const { return StrCat(host, ":", port); }

std::string ProcessSpec::log_name() const {
  switch (role) {
    case Role::kServer: return StrCat("serverlog.", id);
    case Role::kHeterWorker: return StrCat("heterlog.", id);
    case Role::kTrainer: break;
  }
  return StrCat("workerlog.", id);
}

std::string ProcessSpec::label() const {
  switch (role) {
    case Role::kServer: return StrCat("server ", id);
    case Role::kHeterWorker: return StrCat("heter worker ", id);
    case Role::kTrainer: break;
  }
  return StrCat("rank ", id);
}

std::vector<ProcessSpec> ClusterSpec::LocalProcesses() const {
  std::vector<ProcessSpec> local;
  for (const auto* group : {&servers, &heter_workers, &trainers}) {
    for (const auto& p : *group) {
      if (p.node == node_index) local.push_back(p);
    }
  }
  return local;
}

int ClusterSpec::LocalTrainerCount() const {
  int n = 0;
  for (const auto& p : trainers) n += p.node == node_index ? 1 : 0;
  return n;
}

namespace {
std::vector<std::string> Endpoints(const std::vector<ProcessSpec>& procs) {
  std::vector<std::string> out;
  for (const auto& p : procs) out.push_back(p.endpoint());
  return out;
}
}  // namespace

std::vector<std::string> ClusterSpec::TrainerEndpoints() const { return Endpoints(trainers); }
std::vector<std::string> ClusterSpec::ServerEndpoints() const { return Endpoints(servers); }
std::vector<std::string> ClusterSpec::HeterEndpoints() const { return Endpoints(heter_workers); }

}  // namespace flotilla::launch
