#include "flotilla/fleet/role_maker.h"

#include "flotilla/common/enforce.h"
#include "flotilla/common/env.h"
#include "flotilla/common/strings.h"

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
  int64_t n = env::RequireInt(var, why);
  FLOTILLA_CHECK(n >= 1, InvalidArgument, "environment variable ", var, "=", n,
                 " must be at least 1");
  return static_cast<int>(n);
}

int ReadIndex(const std::string& var, int limit, const std::string& limit_var,
              const std::string& why) {
  int64_t i = env::RequireInt(var, why);
  FLOTILLA_CHECK(i >= 0 && i < limit, InvalidArgument, "environment variable ", var, "=", i,
                 " must be in [0, ", limit, ") (", limit_var, "=", limit, ")");
  return static_cast<int>(i);
}

void CheckEndpointCount(const std::vector<std::string>& eps, int n, const std::string& var,
                        const std::string& count_var) {
  if (eps.empty()) return;
  FLOTILLA_CHECK(static_cast<int>(eps.size()) == n, InvalidArgument, "environment variable ",
                 var, " lists ", eps.size(), " endpoints but ", count_var, "=", n);
}

}  // namespace

PaddleCloudRoleMaker::PaddleCloudRoleMaker(bool is_collective) {
  info_.is_collective = is_collective;
  info_.store_address = env::GetOr("PADDLE_MASTER", "");
  info_.job_id = env::GetOr("FLOTILLA_JOB_ID", env::GetOr("PADDLE_JOB_ID", "default"));
  info_.host_id = env::GetOr("FLOTILLA_HOST_ID", "");
  if (is_collective) {
    ReadCollective();
  } else {
    ReadParameterServer();
  }
}

void PaddleCloudRoleMaker::ReadCollective() {
  info_.worker_num = ReadCount("PADDLE_TRAINERS_NUM", kWhyCloud);
  info_.worker_index = ReadIndex("PADDLE_TRAINER_ID", info_.worker_num, "PADDLE_TRAINERS_NUM", kWhyCloud);
  info_.worker_endpoints = ReadEndpoints("PADDLE_TRAINER_ENDPOINTS");
  CheckEndpointCount(info_.worker_endpoints, info_.worker_num, "PADDLE_TRAINER_ENDPOINTS",
                     "PADDLE_TRAINERS_NUM");
  info_.current_endpoint = env::GetOr("PADDLE_CURRENT_ENDPOINT", "");
  if (!info_.current_endpoint.empty()) {
    ParseHostPort(info_.current_endpoint, "environment variable PADDLE_CURRENT_ENDPOINT");
  }
}

void PaddleCloudRoleMaker::ReadParameterServer() {
  std::string role = env::Require("TRAINING_ROLE", kWhyCloud);
  info_.server_endpoints = ReadEndpoints("PADDLE_PSERVERS_IP_PORT_LIST");
  FLOTILLA_CHECK(!info_.server_endpoints.empty(), InvalidArgument,
                 "environment variable PADDLE_PSERVERS_IP_PORT_LIST lists no server");
  info_.worker_num = ReadCount("PADDLE_TRAINERS_NUM", kWhyCloud);
  info_.worker_endpoints = ReadEndpoints("PADDLE_TRAINER_ENDPOINTS");
  if (role == "TRAINER") {
    info_.role = Role::kWorker;
    info_.worker_index = ReadIndex("PADDLE_TRAINER_ID", info_.worker_num, "PADDLE_TRAINERS_NUM", kWhyCloud);
    return;
  }
  FLOTILLA_CHECK(role == "PSERVER", InvalidArgument, "environment variable TRAINING_ROLE='",
                 role, "' must be TRAINER or PSERVER");
  info_.role = Role::kServer;
  info_.worker_index = -1;
  std::string ip = env::Require("POD_IP", kWhyCloud);
  int64_t port = env::RequireInt("PADDLE_PORT", kWhyCloud);
  info_.current_endpoint = StrCat(ip, ":", port);
  for (size_t i = 0; i < info_.server_endpoints.size(); ++i) {
    if (info_.server_endpoints[i] == info_.current_endpoint) info_.server_index = static_cast<int>(i);
  }
  FLOTILLA_CHECK(info_.server_index >= 0, InvalidArgument, "POD_IP:PADDLE_PORT = ",
                 info_.current_endpoint, " is not in PADDLE_PSERVERS_IP_PORT_LIST=",
                 Join(info_.server_endpoints, ","));
}

UserDefinedRoleMaker::UserDefinedRoleMaker(int current_id, Role role, int worker_num,
                                           std::vector<std::string> server_endpoints,
                                           std::vector<std::string> worker_endpoints,
                                           std::string store_address) {
  FLOTILLA_CHECK(worker_num >= 1, InvalidArgument, "UserDefinedRoleMaker: worker_num=",
                 worker_num, " must be at least 1");
  info_.role = role;
  info_.is_collective = server_endpoints.empty();
  info_.worker_num = worker_num;
  info_.server_endpoints = std::move(server_endpoints);
  info_.worker_endpoints = std::move(worker_endpoints);
  info_.store_address = std::move(store_address);
  info_.job_id = "default";
  int limit = role == Role::kWorker ? worker_num : static_cast<int>(info_.server_endpoints.size());
  FLOTILLA_CHECK(current_id >= 0 && current_id < limit, InvalidArgument,
                 "UserDefinedRoleMaker: current_id=", current_id, " must be in [0, ", limit,
                 ") for a ", role == Role::kWorker ? "worker" : "server");
  if (role == Role::kWorker) {
    info_.worker_index = current_id;
  } else {
    info_.worker_index = -1;
    info_.server_index = current_id;
    info_.current_endpoint = info_.server_endpoints[current_id];
  }
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
  for (char& c : job) {
    if (c == '/' || c == '@' || c == ' ') c = '_';
  }
  return StrCat("file:", env::GetOr("TMPDIR", "/tmp"), "/flotilla-mpi-", job);
}

}  // namespace

MPISymetricRoleMaker::MPISymetricRoleMaker() {
  info_.worker_num = ReadCount("OMPI_COMM_WORLD_SIZE", kWhyMpi);
  info_.worker_index = ReadIndex("OMPI_COMM_WORLD_RANK", info_.worker_num, "OMPI_COMM_WORLD_SIZE", kWhyMpi);
  int64_t local = env::RequireInt("OMPI_COMM_WORLD_LOCAL_RANK", kWhyMpi);
  FLOTILLA_CHECK(local >= 0 && local <= info_.worker_index, InvalidArgument,
                 "environment variable OMPI_COMM_WORLD_LOCAL_RANK=", local,
                 " must be in [0, OMPI_COMM_WORLD_RANK=", info_.worker_index, "]");
  info_.store_address = MpiStoreAddress();
  info_.job_id = "mpi";
  info_.host_id = env::GetOr("FLOTILLA_HOST_ID", "");
}

}  // namespace flotilla::fleet
