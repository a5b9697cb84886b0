#include "flotilla/launch/options.h"

#include <algorithm>

#include "flotilla/common/enforce.h"
#include "flotilla/common/env.h"
#include "flotilla/common/strings.h"
#include "flotilla/roles/role_env.h"

namespace flotilla::launch {

using roles::Claim;
using roles::EnvLookup;
using roles::RoleEnvironment;
using roles::RoleField;

const char* RunModeName(RunMode mode) {
  switch (mode) {
    case RunMode::kCollective: return "collective";
    case RunMode::kPs: return "ps";
    case RunMode::kPsHeter: return "ps-heter";
  }
  return "unknown";
}

bool HasPsOptions(const LaunchOptions& o) {
  return !o.servers.empty() || !o.workers.empty() || !o.heter_workers.empty() ||
         o.server_num > 0 || o.worker_num > 0 || o.heter_worker_num > 0;
}

bool HasHeterOptions(const LaunchOptions& o) {
  return !o.heter_workers.empty() || o.heter_worker_num > 0;
}

bool HasElasticOptions(const LaunchOptions& o) {
  // --job_id alone only names the job (Paddle's clusters set PADDLE_JOB_ID for
  // every job); --elastic_server is what turns a job elastic.
  return !o.elastic_server.empty() || !o.np.empty() || o.scale > 0 || o.force;
}

namespace {

// Processes of one role on one node: far more than any machine runs, far
// fewer than would exhaust memory planning them.
constexpr int64_t kMaxProcsPerNode = 4096;
constexpr int64_t kMaxNodes = 1 << 20;

void RejectUnsupported(const LaunchOptions& o) {
  if (HasElasticOptions(o) && o.elastic_server.empty()) {
    FLOTILLA_THROW(InvalidArgument, "--np/--scale/--force belong to elastic jobs and need "
                   "--elastic_server etcd://HOST:PORT (and --job_id)");
  }
  FLOTILLA_ENFORCE(o.scale >= 0, "--scale ", o.scale, " must be a number of nodes");
  FLOTILLA_ENFORCE(!HasHeterOptions(o) || o.elastic_server.empty(), "heter workers "
                   "(--heter_workers/--heter_worker_num) are not available in elastic jobs");
}

}  // namespace

void CheckRanges(const LaunchOptions& o) {
  CheckInRange(o.nproc_per_node, "--nproc_per_node (PADDLE_NPROC_PER_NODE)", 0,
               kMaxProcsPerNode, "0: one per device, or 1");
  CheckInRange(o.started_port, "--started_port (PADDLE_START_PORT)", 0, kMaxPort,
               "0: free ports held by the launcher");
  if (o.started_port > 0) {
    CheckInRange(int64_t{o.started_port} + std::max(o.nproc_per_node, 1) - 1,
                 "the last trainer port (--started_port + --nproc_per_node - 1)", 1,
                 kMaxPort);
  }
  CheckInRange(o.master_port, "--master_port (PADDLE_MASTER_PORT)", 0, kMaxPort, "0: the default");
  CheckInRange(o.nnodes, "--nnodes (PADDLE_NNODES)", 0, kMaxNodes, "0: the number of --ips");
  CheckInRange(o.node_rank, "--rank (PADDLE_RANK)", -1, kMaxNodes - 1, "-1: in order of arrival");
  CheckInRange(o.server_num, "--server_num (PADDLE_SERVER_NUM)", 0, kMaxProcsPerNode);
  CheckInRange(o.worker_num, "--worker_num (PADDLE_TRAINER_NUM)", 0, kMaxProcsPerNode);
  CheckInRange(o.heter_worker_num, "--heter_worker_num", 0, kMaxProcsPerNode);
  CheckInRange(o.http_port, "--http_port (PADDLE_GLOO_PORT)", 0, kMaxPort, "0: any free port");
  CheckInRange(o.scale, "--scale (PADDLE_ELASTIC_SCALE)", 0, kMaxNodes, "0: not a scaling command");
  CheckInRange(o.timeline_max_mb, "--timeline_max_mb", 0, 1 << 20, "0: no bound");
  CheckInRange(o.metrics_port, "--metrics_port", -1, kMaxPort, "-1: none, 0: any free port");
}

RunMode SelectRunMode(const LaunchOptions& o) {
  CheckRanges(o);
  RejectUnsupported(o);
  const std::string mode = Trim(o.run_mode);
  // A heterogeneous job is a ps job with heter workers.
  if (mode == "ps-heter") {
    FLOTILLA_ENFORCE(HasHeterOptions(o), "--run_mode ps-heter needs heter workers: "
                     "--heter_worker_num N (one node) or --heter_workers LIST");
    return RunMode::kPs;
  }
  if (mode == "ps") return RunMode::kPs;
  if (mode == "collective") {
    FLOTILLA_ENFORCE(!HasPsOptions(o), "--run_mode collective conflicts with the "
                     "parameter-server options (--servers/--workers/--server_num/"
                     "--worker_num/--heter_workers/--heter_worker_num); drop one or the other");
    return RunMode::kCollective;
  }
  FLOTILLA_ENFORCE(mode.empty(), "--run_mode '", mode,
                   "' is not one of collective, ps, ps-heter");
  return HasPsOptions(o) ? RunMode::kPs : RunMode::kCollective;
}

void ApplyPaddleCloudEnv(LaunchOptions& o) {
  if (!o.use_paddlecloud) return;
  // PaddleCloud lists the nodes in PADDLE_TRAINERS and this node in POD_IP;
  // PADDLE_PORT is the first port the platform reserved for the job.
  if (auto trainers = env::Get("PADDLE_TRAINERS")) o.ips = *trainers;
  if (auto pod_ip = env::Get("POD_IP")) o.host = *pod_ip;
  if (o.started_port == 0) {
    o.started_port = static_cast<int>(env::GetIntInRange("PADDLE_PORT", 0, 1, kMaxPort));
  }
}

namespace {

bool HasOwnLayout(const LaunchOptions& o) {
  return o.use_paddlecloud || !o.elastic_server.empty() || !o.master.empty() ||
         Trim(o.ips) != "127.0.0.1" || !o.servers.empty() || !o.workers.empty();
}

}  // namespace

std::string ApplyEngineEnv(LaunchOptions& o, const EnvLookup& lookup) {
  if (HasOwnLayout(o)) return "";
  const RoleEnvironment roles = RoleEnvironment::Read(lookup);
  const Claim* master = roles.Get(RoleField::kMaster);
  const Claim* tasks = roles.Get(RoleField::kWorldSize);
  const Claim* nodes = tasks != nullptr ? tasks : roles.Get(RoleField::kNnodes);
  if (nodes == nullptr) return "";
  const int count = o.nnodes > 0 ? o.nnodes : *roles.Int(nodes->field);
  if (count <= 1) return "";
  if (master == nullptr) {
    // An engine started several launchers that cannot find one another.
    FLOTILLA_ENFORCE(tasks == nullptr, "flotilla launch was started as one of ", count,
                     " tasks (", tasks->origin, ") but no variable says where the launchers "
                     "meet: export MASTER_ADDR and MASTER_PORT (mpirun -x MASTER_ADDR -x "
                     "MASTER_PORT), or pass --master HOST:PORT or --ips");
    return "";
  }
  o.nnodes = count;
  const Claim* task = roles.Get(RoleField::kRank);
  if (o.node_rank < 0 && task != nullptr) o.node_rank = *roles.Int(RoleField::kRank);
  o.master = master->value;
  if (o.job_id.empty()) o.job_id = roles.Value(RoleField::kJobId).value_or("");
  return StrCat("one node of ", o.nnodes, " (", nodes->origin, "), node rank ",
                o.node_rank >= 0 ? std::to_string(o.node_rank) : "on arrival",
                task != nullptr ? StrCat(" (", task->origin, ")") : "", ", master ", o.master, " (",
                master->origin, ")");
}

}  // namespace flotilla::launch
