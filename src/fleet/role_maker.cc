#include "flotilla/fleet/role_maker.h"

#include "flotilla/common/enforce.h"
#include "flotilla/common/env.h"
#include "flotilla/common/strings.h"
#include "flotilla/roles/role_env.h"

namespace flotilla::fleet {

namespace {

constexpr const char* kWhyCloud = "needed by PaddleCloudRoleMaker";
constexpr const char* kWhyMpi = "needed by MPISymetricRoleMaker (run under mpirun)";

// A comma-separated endpoint list; every item must be host:port.
std::vector<std::string> ReadEndpoints(const std::string& var) {
  std::vector<std::string> eps = env::GetList(var);
  for (const auto& ep : eps) ParseHostPort(ep, "environment variable " + var);
  return eps;
}

int ReadCount(const std::string& var, const std::string& why) {
  const int64_t n = env::RequireInt(var, why);
  return static_cast<int>(CheckInRange(n, "environment variable " + var, 1, INT32_MAX));
}

int ReadIndex(const std::string& var, int limit, const std::string& limit_var,
              const std::string& why) {
  int64_t i = env::RequireInt(var, why);
  FLOTILLA_CHECK(i >= 0 && i < limit, InvalidArgument, "environment variable ", var, "=", i,
                 " must be in [0, ", limit, ") (", limit_var, "=", limit, ")");
  return static_cast<int>(i);
}

// A FileStore in $TMPDIR named after an MPI job (one host or a shared file
// system).
std::string MpiFileStore(std::string job) {
  for (char& c : job) {
    if (c == '/' || c == '@' || c == ' ') c = '_';
  }
  return StrCat("file:", env::GetOr("TMPDIR", "/tmp"), "/flotilla-mpi-", job);
}

void CheckEndpointCount(const std::vector<std::string>& eps, int n, const std::string& var,
                        const std::string& count_var) {
  if (eps.empty()) return;
  FLOTILLA_CHECK(static_cast<int>(eps.size()) == n, InvalidArgument, "environment variable ",
                 var, " lists ", eps.size(), " endpoints but ", count_var, "=", n);
}

}  // namespace

PaddleCloudRoleMaker::PaddleCloudRoleMaker(bool is_collective, bool non_distributed_fallback) {
  info_.is_collective = is_collective;
  info_.store_address = env::GetOr("PADDLE_MASTER", "");
  info_.job_id = env::GetOr("FLOTILLA_JOB_ID", env::GetOr("PADDLE_JOB_ID", "default"));
  info_.host_id = env::GetOr("FLOTILLA_HOST_ID", env::GetOr("SLURMD_NODENAME", ""));
  if (is_collective) {
    ReadCollective(non_distributed_fallback);
  } else if (non_distributed_fallback && !env::Get("TRAINING_ROLE") && !env::Get("PADDLE_PSERVERS_IP_PORT_LIST")) {
    info_.non_distributed = true;  // Paddle's "back to non_distributed execution"
  } else {
    ReadParameterServer();
  }
}

namespace {

using roles::RoleField;

constexpr const char* kRankVariables =
    "PADDLE_TRAINER_ID (flotilla launch), RANK (torchrun, PyTorchJob), JOB_COMPLETION_INDEX "
    "(Kubernetes Indexed Job), SLURM_PROCID (srun) or OMPI_COMM_WORLD_RANK (mpirun)";

const roles::Claim& RequireClaim(const roles::RoleEnvironment& roles, RoleField field,
                                  const char* what) {
  const roles::Claim* c = roles.Get(field);
  FLOTILLA_CHECK(c != nullptr, NotFound, "PaddleCloudRoleMaker: no environment variable names ",
                 "this process's ", what, "; set ", kRankVariables,
                 field == RoleField::kWorldSize ? " with the matching world size" : "");
  return *c;
}

// The store: the chain's master; a FileStore named after the job under
// mpirun alone. Worker 0 hosts a master that no launcher hosts.
void ReadStore(const roles::RoleEnvironment& roles, RoleInfo& info) {
  if (const roles::Claim* master = roles.Get(RoleField::kMaster)) {
    info.store_address = master->value;
    info.host_store = master->family == roles::EnvFamily::kPyTorch ||
                      master->family == roles::EnvFamily::kSlurm;
    return;
  }
  const roles::Claim* job = roles.Get(RoleField::kJobId);
  if (job != nullptr && job->family == roles::EnvFamily::kMpi) {
    info.store_address = MpiFileStore(job->value);
  }
}

}  // namespace

bool RoleInEnvironment() {
  return roles::RoleEnvironment::Read(roles::ProcessEnv()).HasRank();
}

// Paddle's collective role without a launcher: worker 0 of 1 at the one
// endpoint PADDLE_TRAINER_ENDPOINTS names, else at Paddle's placeholder.
// False (nothing set) when that variable lists several workers: a job of
// several workers needs each one's rank.
bool PaddleCloudRoleMaker::ReadAloneCollective() {
  std::vector<std::string> eps = ReadEndpoints("PADDLE_TRAINER_ENDPOINTS");
  if (eps.size() > 1) return false;
  info_.non_distributed = eps.empty();
  if (eps.empty()) eps.push_back("127.0.0.1:6170");
  info_.worker_endpoints = eps;
  info_.current_endpoint = env::GetOr("PADDLE_CURRENT_ENDPOINT", eps.front());
  return true;
}

void PaddleCloudRoleMaker::ReadCollective(bool fallback) {
  const auto roles = roles::RoleEnvironment::Read(roles::ProcessEnv());
  if (fallback && !roles.HasRank() && ReadAloneCollective()) return;
  const roles::Claim& size = RequireClaim(roles, RoleField::kWorldSize, "world size");
  const roles::Claim& rank = RequireClaim(roles, RoleField::kRank, "rank");
  info_.worker_num = *roles.Int(RoleField::kWorldSize);
  FLOTILLA_CHECK(info_.worker_num >= 1, InvalidArgument, "environment variable ", size.origin,
                 "=", size.value, " must be at least 1");
  info_.worker_index = *roles.Int(RoleField::kRank);
  FLOTILLA_CHECK(info_.worker_index < info_.worker_num, InvalidArgument,
                 "environment variable ", rank.origin, "=", rank.value, " must be in [0, ",
                 info_.worker_num, ") (", size.origin, "=", size.value, ")");
  ReadStore(roles, info_);
  if (auto job = roles.Value(RoleField::kJobId)) info_.job_id = *job;
  info_.worker_endpoints = ReadEndpoints("PADDLE_TRAINER_ENDPOINTS");
  CheckEndpointCount(info_.worker_endpoints, info_.worker_num, "PADDLE_TRAINER_ENDPOINTS",
                     size.origin);
  info_.current_endpoint = env::GetOr("PADDLE_CURRENT_ENDPOINT", "");
  if (!info_.current_endpoint.empty()) {
    ParseHostPort(info_.current_endpoint, "environment variable PADDLE_CURRENT_ENDPOINT");
  }
  // Paddle's own launcher names no store: the trainers meet at the first
  // trainer's endpoint, where trainer 0 hosts it.
  if (info_.store_address.empty() && info_.worker_num > 1 && !info_.worker_endpoints.empty()) {
    info_.store_address = info_.worker_endpoints.front();
    info_.host_store = true;
  }
}

void PaddleCloudRoleMaker::ReadParameterServer() {
  std::string role = env::Require("TRAINING_ROLE", kWhyCloud);
  info_.server_endpoints = ReadEndpoints("PADDLE_PSERVERS_IP_PORT_LIST");
  FLOTILLA_CHECK(!info_.server_endpoints.empty(), InvalidArgument,
                 "environment variable PADDLE_PSERVERS_IP_PORT_LIST lists no server");
  info_.worker_num = ReadCount("PADDLE_TRAINERS_NUM", kWhyCloud);
  info_.worker_endpoints = ReadEndpoints("PADDLE_TRAINER_ENDPOINTS");
  info_.heter_endpoints = ReadEndpoints("PADDLE_HETER_TRAINER_IP_PORT_LIST");
  if (role == "TRAINER") {
    info_.role = Role::kWorker;
    info_.worker_index = ReadIndex("PADDLE_TRAINER_ID", info_.worker_num, "PADDLE_TRAINERS_NUM", kWhyCloud);
    return;
  }
  FLOTILLA_CHECK(role == "PSERVER" || role == "HETER_TRAINER", InvalidArgument,
                 "environment variable TRAINING_ROLE='", role, "' must be TRAINER, PSERVER or HETER_TRAINER");
  const bool heter = role == "HETER_TRAINER";
  info_.role = heter ? Role::kHeterWorker : Role::kServer;
  info_.worker_index = -1;
  std::string ip = env::Require("POD_IP", kWhyCloud);
  const int64_t port =
      CheckInRange(env::RequireInt("PADDLE_PORT", kWhyCloud), "environment variable PADDLE_PORT",
                   1, kMaxPort);
  info_.current_endpoint = StrCat(ip, ":", port);
  const auto& list = heter ? info_.heter_endpoints : info_.server_endpoints;
  int& index = heter ? info_.heter_index : info_.server_index;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] == info_.current_endpoint) index = static_cast<int>(i);
  }
  FLOTILLA_CHECK(index >= 0, InvalidArgument, "POD_IP:PADDLE_PORT = ", info_.current_endpoint,
                 " is not in ", heter ? "PADDLE_HETER_TRAINER_IP_PORT_LIST=" : "PADDLE_PSERVERS_IP_PORT_LIST=",
                 Join(list, ","));
}

UserDefinedRoleMaker::UserDefinedRoleMaker(int current_id, Role role, int worker_num,
                                           std::vector<std::string> server_endpoints,
                                           std::vector<std::string> worker_endpoints,
                                           std::string store_address)
    : UserDefinedRoleMaker(UserDefinedRole{.current_id = current_id,
                                           .role = role,
                                           .worker_num = worker_num,
                                           .worker_endpoints = std::move(worker_endpoints),
                                           .server_endpoints = std::move(server_endpoints),
                                           .store_address = std::move(store_address)}) {}

namespace {

// worker_num, or the number of worker endpoints when it is 0 (Paddle's rule).
int InferWorkerNum(const UserDefinedRole& r) {
  const int listed = static_cast<int>(r.worker_endpoints.size());
  FLOTILLA_CHECK(r.worker_num >= 0, InvalidArgument, "UserDefinedRoleMaker: worker_num=",
                 r.worker_num, " must be at least 1");
  FLOTILLA_CHECK(r.worker_num > 0 || listed > 0, InvalidArgument, "UserDefinedRoleMaker: ",
                 "give worker_num or worker_endpoints (worker_num=0 and no worker_endpoints)");
  FLOTILLA_CHECK(r.worker_num == 0 || listed == 0 || r.worker_num == listed, InvalidArgument,
                 "UserDefinedRoleMaker: worker_num=", r.worker_num, " but worker_endpoints lists ",
                 listed, " workers (", Join(r.worker_endpoints, ","), ")");
  for (const auto& ep : r.worker_endpoints) ParseHostPort(ep, "UserDefinedRoleMaker worker_endpoints");
  for (const auto& ep : r.server_endpoints) ParseHostPort(ep, "UserDefinedRoleMaker server_endpoints");
  return r.worker_num > 0 ? r.worker_num : listed;
}

}  // namespace

UserDefinedRoleMaker::UserDefinedRoleMaker(const UserDefinedRole& r) {
  FLOTILLA_CHECK(r.role != Role::kHeterWorker, InvalidArgument, "UserDefinedRoleMaker: heter workers "
                 "read their place from the environment (PaddleCloudRoleMaker, TRAINING_ROLE=HETER_TRAINER)");
  info_.role = r.role;
  info_.is_collective = r.is_collective.value_or(r.server_endpoints.empty());
  FLOTILLA_CHECK(!info_.is_collective || r.role == Role::kWorker, InvalidArgument,
                 "UserDefinedRoleMaker: a collective job has no servers (role=SERVER with is_collective)");
  info_.worker_num = InferWorkerNum(r);
  if (!info_.is_collective) info_.server_endpoints = r.server_endpoints;
  info_.worker_endpoints = r.worker_endpoints;
  info_.store_address = r.store_address;
  info_.job_id = "default";
  const bool worker = r.role == Role::kWorker;
  const int limit = worker ? info_.worker_num : static_cast<int>(info_.server_endpoints.size());
  FLOTILLA_CHECK(r.current_id >= 0 && r.current_id < limit, InvalidArgument,
                 "UserDefinedRoleMaker: current_id=", r.current_id, " must be in [0, ", limit,
                 ") for a ", worker ? "worker" : "server");
  const auto& own = worker ? info_.worker_endpoints : info_.server_endpoints;
  if (static_cast<size_t>(r.current_id) < own.size()) info_.current_endpoint = own[r.current_id];
  info_.worker_index = worker ? r.current_id : -1;
  if (!worker) info_.server_index = r.current_id;
}

UserDefinedRoleMaker& UserDefinedRoleMaker::set_host_id(std::string host_id) {
  info_.host_id = std::move(host_id);
  return *this;
}

UserDefinedRoleMaker& UserDefinedRoleMaker::set_job_id(std::string job_id) {
  info_.job_id = std::move(job_id);
  return *this;
}

namespace {

// FLOTILLA_STORE, PADDLE_MASTER, else a FileStore named after the MPI job.
std::string MpiStoreAddress() {
  if (auto s = env::Get("FLOTILLA_STORE"); s && !s->empty()) return *s;
  if (auto s = env::Get("PADDLE_MASTER"); s && !s->empty()) return *s;
  std::string job = env::GetOr("OMPI_MCA_ess_base_jobid", env::GetOr("PMIX_NAMESPACE", ""));
  FLOTILLA_CHECK(!job.empty(), NotFound, "MPISymetricRoleMaker: none of FLOTILLA_STORE, ",
                 "PADDLE_MASTER, OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE is set; ",
                 "cannot choose where the ranks meet");
  return MpiFileStore(job);
}

}  // namespace

MPISymetricRoleMaker::MPISymetricRoleMaker(bool parameter_servers) {
  info_.worker_num = ReadCount("OMPI_COMM_WORLD_SIZE", kWhyMpi);
  info_.worker_index = ReadIndex("OMPI_COMM_WORLD_RANK", info_.worker_num, "OMPI_COMM_WORLD_SIZE", kWhyMpi);
  int64_t local = env::RequireInt("OMPI_COMM_WORLD_LOCAL_RANK", kWhyMpi);
  FLOTILLA_CHECK(local >= 0 && local <= info_.worker_index, InvalidArgument,
                 "environment variable OMPI_COMM_WORLD_LOCAL_RANK=", local,
                 " must be in [0, OMPI_COMM_WORLD_RANK=", info_.worker_index, "]");
  info_.store_address = MpiStoreAddress();
  info_.job_id = "mpi";
  info_.host_id = env::GetOr("FLOTILLA_HOST_ID", "");
  if (parameter_servers) UseParameterServerLayout();
}

}  // namespace flotilla::fleet
