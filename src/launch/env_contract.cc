#include "launch/env_contract.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "flotilla/common/strings.h"
#include "flotilla/roles/role_env.h"

extern char** environ;

namespace flotilla::launch {

namespace {

std::string JoinAll(const std::vector<std::string>& v) { return Join(v, ","); }

// TRAINING_ROLE's value: PSERVER, HETER_TRAINER or TRAINER.
const char* PsRoleName(Role role) {
  switch (role) {
    case Role::kServer: return "PSERVER";
    case Role::kHeterWorker: return "HETER_TRAINER";
    case Role::kTrainer: break;
  }
  return "TRAINER";
}

EnvList CollectiveEnv(const ClusterSpec& spec, const ProcessSpec& p) {
  const std::string devices = JoinAll(p.devices);
  return {
      {"PADDLE_TRAINER_ID", std::to_string(p.id)},
      {"PADDLE_TRAINERS_NUM", std::to_string(spec.trainers.size())},
      {"PADDLE_TRAINER_ENDPOINTS", JoinAll(spec.TrainerEndpoints())},
      {"PADDLE_CURRENT_ENDPOINT", p.endpoint()},
      {"PADDLE_RANK_IN_NODE", std::to_string(p.local_rank)},
      {"PADDLE_LOCAL_DEVICE_IDS", devices},
      {"FLAGS_selected_gpus", devices},
      {"PADDLE_NNODES", std::to_string(spec.nodes.size())},
      {"PADDLE_LOCAL_SIZE", std::to_string(spec.LocalTrainerCount())},
      {"PADDLE_MASTER", spec.master},
  };
}

// The DistributeTranspiler's variables. PADDLE_PSERVER_PORT is one port
// for every server, so it is set only when the servers share one.
void AddClassicPsEnv(const ClusterSpec& spec, const ProcessSpec& p, EnvList& env) {
  std::vector<std::string> ips;
  for (const auto& s : spec.servers) ips.push_back(s.host);
  env.emplace_back("PADDLE_TRAINING_ROLE", PsRoleName(p.role));
  env.emplace_back("PADDLE_PSERVER_IPS", JoinAll(ips));
  const bool one_port = std::all_of(spec.servers.begin(), spec.servers.end(),
                                    [&](const ProcessSpec& s) { return s.port == spec.servers[0].port; });
  if (p.role == Role::kServer) {
    env.emplace_back("PADDLE_PSERVER_PORT", std::to_string(p.port));
  } else if (one_port) {
    env.emplace_back("PADDLE_PSERVER_PORT", std::to_string(spec.servers[0].port));
  }
  env.emplace_back("PADDLE_TRAINERS", std::to_string(spec.trainers.size()));
  env.emplace_back("PADDLE_CURRENT_IP", p.host);
}

EnvList PsEnv(const ClusterSpec& spec, const ProcessSpec& p) {
  const bool server = p.role == Role::kServer;
  EnvList env = {
      {"TRAINING_ROLE", PsRoleName(p.role)},
      {"PADDLE_PSERVERS_IP_PORT_LIST", JoinAll(spec.ServerEndpoints())},
      {"PADDLE_TRAINER_ENDPOINTS", JoinAll(spec.TrainerEndpoints())},
      {"PADDLE_TRAINERS_NUM", std::to_string(spec.trainers.size())},
      {"PADDLE_PSERVERS_NUM", std::to_string(spec.servers.size())},
      {server ? "PADDLE_PSERVER_ID" : p.role == Role::kHeterWorker ? "PADDLE_HETER_TRAINER_ID"
                                                                    : "PADDLE_TRAINER_ID",
       std::to_string(p.id)},
      {"PADDLE_PORT", std::to_string(p.port)},
      {"POD_IP", p.host},
      {"PADDLE_CURRENT_ENDPOINT", p.endpoint()},
      {"PADDLE_NNODES", std::to_string(spec.nodes.size())},
      {"PADDLE_MASTER", spec.master},
      {"PADDLE_GLOO_HTTP_ENDPOINT", spec.master},
  };
  if (!spec.heter_workers.empty()) {
    env.emplace_back("PADDLE_HETER_TRAINER_IP_PORT_LIST", JoinAll(spec.HeterEndpoints()));
  }
  AddClassicPsEnv(spec, p, env);
  return env;
}

}  // namespace

// Flotilla's own: which processes share a machine (the comm layer uses
// shared memory between them), the address gloo listens on (this node's
// address in the job, reachable from the other nodes) and the job's name.
void AddFlotillaEnv(const ClusterSpec& spec, const ProcessSpec& p, EnvList& env) {
  env.emplace_back("FLOTILLA_HOST_ID", p.host);
  env.emplace_back("FLOTILLA_GLOO_HOSTNAME", p.host);
  if (!spec.job_id.empty()) env.emplace_back("FLOTILLA_JOB_ID", spec.job_id);
  // Elastic jobs: > 0 tells a process that it restarted in a new world.
  if (spec.generation >= 0) {
    env.emplace_back("FLOTILLA_ELASTIC_GENERATION", std::to_string(spec.generation));
  }
}

EnvList ContractEnv(const ClusterSpec& spec, const ProcessSpec& p) {
  EnvList env = spec.mode == RunMode::kPs ? PsEnv(spec, p) : CollectiveEnv(spec, p);
  AddFlotillaEnv(spec, p, env);
  return env;
}

const std::vector<std::string>& ContractVariableNames() {
  static const std::vector<std::string> names = {
      "PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "PADDLE_TRAINER_ENDPOINTS",
      "PADDLE_CURRENT_ENDPOINT", "PADDLE_RANK_IN_NODE", "PADDLE_LOCAL_DEVICE_IDS",
      "FLAGS_selected_gpus", "PADDLE_NNODES", "PADDLE_LOCAL_SIZE", "PADDLE_MASTER",
      "TRAINING_ROLE", "PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_PSERVERS_NUM",
      "PADDLE_PSERVER_ID", "PADDLE_PORT", "POD_IP", "PADDLE_GLOO_HTTP_ENDPOINT",
      "PADDLE_TRAINING_ROLE", "PADDLE_PSERVER_IPS", "PADDLE_PSERVER_PORT",
      "PADDLE_TRAINERS", "PADDLE_CURRENT_IP", "FLOTILLA_HOST_ID", "FLOTILLA_GLOO_HOSTNAME",
      "FLOTILLA_JOB_ID", "FLOTILLA_ELASTIC_GENERATION", "PADDLE_HETER_TRAINER_IP_PORT_LIST",
      "PADDLE_HETER_TRAINER_ID"};
  return names;
}

std::vector<std::string> ChildEnvironment(const std::vector<std::string>& inherited,
                                          const EnvList& contract) {
  const auto& names = ContractVariableNames();
  std::set<std::string> drop(names.begin(), names.end());
  // What cluster platforms set for the node (PaddleCloud: this node's address,
  // the node list, the first port) is kept unless this mode sets it.
  for (const char* platform : {"POD_IP", "PADDLE_TRAINERS", "PADDLE_PORT"}) drop.erase(platform);
  // An engine's task identity describes the launcher, not its children.
  for (const auto& name : roles::EngineTaskVariableNames()) drop.insert(name);
  for (const auto& entry : contract) drop.insert(entry.first);
  std::vector<std::string> out;
  for (const auto& entry : inherited) {
    if (!drop.count(entry.substr(0, entry.find('=')))) out.push_back(entry);
  }
  for (const auto& [name, value] : contract) out.push_back(name + "=" + value);
  return out;
}

EnvList ThreadDefaults(const std::vector<std::string>& inherited, int local_processes,
                       int cores) {
  auto find = [&](std::string_view name) -> const std::string* {
    for (const auto& e : inherited) {
      if (std::string_view(e).starts_with(name) && e.size() > name.size() && e[name.size()] == '=') {
        return &e;
      }
    }
    return nullptr;
  };
  const std::string* omp = find("OMP_NUM_THREADS");
  const std::string threads = omp != nullptr
                                  ? omp->substr(omp->find('=') + 1)
                                  : std::to_string(std::max(1, cores / std::max(1, local_processes)));
  EnvList env;
  if (omp == nullptr) env.emplace_back("OMP_NUM_THREADS", threads);
  if (find("OPENBLAS_NUM_THREADS") == nullptr) env.emplace_back("OPENBLAS_NUM_THREADS", threads);
  return env;
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

}  // namespace flotilla::launch
