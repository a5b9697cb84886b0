// Role makers: where a process learns its place in a job (Paddle's
// fluid.incubate.fleet.base.role_maker).
//
//   PaddleCloudRoleMaker role(/*is_collective=*/true);   // from the env contract
//   fleet::init(role);
//
// Every role maker reads its source when constructed and throws
// InvalidArgument (Paddle's ValueError) naming a role variable that is
// missing or malformed — NotFound when no variable names the rank or world
// size of a collective job — so a misconfigured job fails at its first line. Role makers are
// immutable values after construction; copying them is cheap and safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace flotilla::fleet {

// kHeterWorker: heterogeneous PS jobs' dense-part workers.
enum class Role { kWorker, kServer, kHeterWorker };

// What every role maker produces.
struct RoleInfo {
  Role role = Role::kWorker;
  bool is_collective = true;
  int worker_index = 0;   // rank among workers (workers only)
  int worker_num = 1;
  int server_index = -1;  // index in server_endpoints (servers only)
  std::vector<std::string> worker_endpoints;  // "host:port", may be empty
  std::vector<std::string> server_endpoints;
  // Heterogeneous PS jobs: the heter workers; trainer i hands its batches
  // to heter_endpoints[i % size].
  std::vector<std::string> heter_endpoints;
  int heter_index = -1;                       // index in heter_endpoints (heter workers only)
  std::string current_endpoint;               // may be empty
  // Where the workers meet: "host:port" of a TCP store, "file:/dir" of a
  // FileStore, or empty (only a one-worker job may leave it empty).
  std::string store_address;
  // True when worker 0 hosts the TCP store at store_address itself (a job
  // started without flotilla launch: torchrun-style MASTER_ADDR, Slurm,
  // Kubernetes); false when a launcher hosts it.
  bool host_store = false;
  // Key prefix that keeps jobs sharing one store apart.
  std::string job_id;
  // Groups ranks by machine for hierarchical all-reduce; empty = hostname.
  std::string host_id;
  // Paddle's "non-distributed" fleet: a script started without a launcher
  // (PaddleCloudRoleMaker with fallback): one worker, no servers, and the
  // parameter-server calls (init_worker, run_server, ...) warn and do nothing.
  bool non_distributed = false;
};

class RoleMaker {
 public:
  virtual ~RoleMaker() = default;
  const RoleInfo& info() const { return info_; }

  bool is_worker() const { return info_.role == Role::kWorker; }
  bool is_server() const { return info_.role == Role::kServer; }
  bool is_heter_worker() const { return info_.role == Role::kHeterWorker; }
  bool is_first_worker() const { return is_worker() && info_.worker_index == 0; }
  int worker_index() const { return info_.worker_index; }
  int server_index() const { return info_.server_index; }
  int worker_num() const { return info_.worker_num; }
  int server_num() const { return static_cast<int>(info_.server_endpoints.size()); }
  const std::vector<std::string>& worker_endpoints() const { return info_.worker_endpoints; }
  const std::vector<std::string>& server_endpoints() const { return info_.server_endpoints; }
  const std::string& current_endpoint() const { return info_.current_endpoint; }
  virtual std::string name() const = 0;

 protected:
  RoleInfo info_;
};

// Reads the Paddle environment contract (docs/env.md).
// Collective: the rank and world size from the role-resolution chain
// (include/flotilla/roles/role_env.h: PADDLE_TRAINER_ID / PADDLE_TRAINERS_NUM as
// flotilla launch sets them, else RANK / WORLD_SIZE, JOB_COMPLETION_INDEX,
// SLURM_PROCID / SLURM_NTASKS, OMPI_COMM_WORLD_RANK / _SIZE), the store from
// the chain's master (FLOTILLA_STORE, PADDLE_MASTER, MASTER_ADDR:MASTER_PORT,
// Slurm's first host; worker 0 hosts it unless a launcher does; under
// mpirun alone a FileStore as MPISymetricRoleMaker's), PADDLE_TRAINER_ENDPOINTS,
// PADDLE_CURRENT_ENDPOINT, the job id from the chain and FLOTILLA_HOST_ID
// (else SLURMD_NODENAME) (optional). Throws InvalidArgument naming both
// variables when two families disagree on the rank or world size.
// Parameter server: TRAINING_ROLE (TRAINER|PSERVER|HETER_TRAINER),
// PADDLE_PSERVERS_IP_PORT_LIST, PADDLE_TRAINERS_NUM, and in heterogeneous
// jobs PADDLE_HETER_TRAINER_IP_PORT_LIST; trainers add PADDLE_TRAINER_ID,
// servers and heter workers POD_IP and PADDLE_PORT (their endpoint must be
// in their list).
//
// With `non_distributed_fallback` (Paddle's behaviour, what the Python role
// maker asks for), a process the environment gives no place in a job runs
// as Paddle's non-distributed fleet instead of failing: collective, when no
// family names a rank and PADDLE_TRAINER_ENDPOINTS lists at most one
// endpoint — worker 0 of 1, its endpoint that one (non_distributed = false,
// as Paddle's when the variable is set) or 127.0.0.1:6170
// (non_distributed = true); parameter server, when
// PADDLE_PSERVERS_IP_PORT_LIST is not set (whatever TRAINING_ROLE says, as
// Paddle's) — worker 0 of 1 with no servers (non_distributed = true). Anything else is read strictly as above.
class PaddleCloudRoleMaker : public RoleMaker {
 public:
  explicit PaddleCloudRoleMaker(bool is_collective = false, bool non_distributed_fallback = false);
  std::string name() const override { return "PaddleCloudRoleMaker"; }

 private:
  void ReadCollective(bool fallback);
  void ReadParameterServer();
  bool ReadAloneCollective();
};

// Paddle's UserDefinedRoleMaker arguments.
struct UserDefinedRole {
  int current_id = 0;
  Role role = Role::kWorker;
  // 0: the number of worker_endpoints (Paddle's rule). When both are given
  // they must agree.
  int worker_num = 0;
  // Unset: collective exactly when server_endpoints is empty. A collective
  // role ignores server_endpoints.
  std::optional<bool> is_collective;
  std::vector<std::string> worker_endpoints;  // "host:port"
  std::vector<std::string> server_endpoints;
  // Where the workers meet: "host:port" of a TCP store or "file:/dir".
  std::string store_address;
};

// A role given in code, for tests and custom clusters. A worker's
// current_endpoint is worker_endpoints[current_id] when listed, a server's
// server_endpoints[current_id]. Throws InvalidArgument when current_id is
// out of range for the role, when no worker is given (worker_num 0 and no
// worker_endpoints), when worker_num and worker_endpoints disagree, or for
// a server in a collective role.
class UserDefinedRoleMaker : public RoleMaker {
 public:
  explicit UserDefinedRoleMaker(const UserDefinedRole& role);
  UserDefinedRoleMaker(int current_id, Role role, int worker_num,
                       std::vector<std::string> server_endpoints = {},
                       std::vector<std::string> worker_endpoints = {},
                       std::string store_address = "");
  std::string name() const override { return "UserDefinedRoleMaker"; }

  // Tests simulate several machines on one: set before fleet::init.
  UserDefinedRoleMaker& set_host_id(std::string host_id);
  UserDefinedRoleMaker& set_job_id(std::string job_id);
};

// True when some family of the role-resolution chain names this process's
// rank: a launcher, torchrun, Slurm, Kubernetes or mpirun started it as one
// rank of a job. Programs that also run alone use it to choose a role maker.
bool RoleInEnvironment();

// Under `mpirun -np N`: rank from OMPI_COMM_WORLD_RANK, size from
// OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK checked (all required).
// Every rank is a collective worker. The workers meet through, in order:
// FLOTILLA_STORE ("host:port" or "file:/dir"), PADDLE_MASTER, else a
// FileStore in $TMPDIR (default /tmp) named after the MPI job
// (OMPI_MCA_ess_base_jobid or PMIX_NAMESPACE) — which suits one host or a
// shared file system.
//
// With `parameter_servers` (Paddle's layout for MPI parameter-server jobs, and
// what the Python MPISymetricRoleMaker gives): one server and one worker per
// node, so N must be even (InvalidArgument otherwise): even ranks are
// servers (index rank/2), odd ranks workers (index rank/2), N/2 of each.
// Each server holds a free port on POD_IP (default 127.0.0.1) until the
// role maker is destroyed and publishes it through the ranks' store; the
// constructor blocks until every server has (FLOTILLA_RENDEZVOUS_TIMEOUT
// seconds, default 120, then Timeout).
class MPISymetricRoleMaker : public RoleMaker {
 public:
  explicit MPISymetricRoleMaker(bool parameter_servers = false);
  std::string name() const override { return "MPISymetricRoleMaker"; }

 private:
  class PortHold;
  void UseParameterServerLayout();
  std::shared_ptr<PortHold> port_;  // servers only
};

}  // namespace flotilla::fleet
