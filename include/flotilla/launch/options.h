// LaunchOptions: everything `flotilla launch` and `flotilla launch_ps` accept,
// after the command line and the environment have been merged (the CLI layer
// in tools/flotilla does that). The library never reads argv; tests and other
// front ends fill this struct directly.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace flotilla::launch {

enum class RunMode { kCollective, kPs, kPsHeter };

// "collective", "ps", "ps-heter".
const char* RunModeName(RunMode mode);

struct LaunchOptions {
  // Base.
  std::string log_dir = "log";
  std::string run_mode;                  // "" = decided by SelectRunMode
  std::string devices;                   // --gpus / --devices / --selected_gpus
  int nproc_per_node = 0;                // 0 = one process per device (or 1)
  std::string ips = "127.0.0.1";         // --ips / --cluster_node_ips
  std::string host;                      // --host / --node_ip (this node's address)
  int started_port = 0;                  // 0 = reserve free ports
  int master_port = 0;                   // store port on node 0; 0 = default
  bool use_paddlecloud = false;
  int nnodes = 0;                        // 0 = number of --ips; checked against it
  std::string master;                    // HOST:PORT: nodes meet there instead of --ips
  int node_rank = -1;                    // with --master: this node's index; -1 = on arrival
  // Parameter server.
  std::string servers;
  std::string workers;
  std::string heter_workers;
  int server_num = 0;
  int worker_num = 0;
  int heter_worker_num = 0;
  int http_port = 0;
  // Elastic (--elastic_server; docs/elastic.md).
  std::string elastic_server;
  std::string job_id;
  std::string np;
  // --scale N: set a running elastic job's size to N nodes (within its
  // --np MIN:MAX) and exit; starts no program. 0 = not a scaling command.
  int scale = 0;
  bool force = false;
  std::chrono::seconds elastic_ttl{3};                // a node's lease in etcd
  std::chrono::milliseconds elastic_timeout{10000};   // the first world waits this long for MAX
  // "none": a failed trainer stops the job (or, elastic, restarts it);
  // "step": survivors re-form in-process (docs/elastic.md).
  std::string fault_tolerance = "none";
  // Supervision.
  std::chrono::milliseconds grace_period{5000};
  std::chrono::milliseconds poll_interval{50};
  std::chrono::milliseconds rendezvous_timeout{120000};
  std::chrono::milliseconds node_timeout{10000};  // silence after which a node counts as lost
  bool quiet = false;                    // no banner, no live rank-0 output
  // --insecure: the job runs without a secret (its store and servers accept
  // anyone who reaches them); the launcher warns and its children get
  // FLOTILLA_INSECURE=1.
  bool insecure = false;
  // The job secret the launcher's stores demand (flotilla/common/job_secret.h).
  // Filled by Launch(), never from the command line.
  std::string job_secret;
  // TLS files (--tls_cert, --tls_key, --tls_ca; flotilla/common/tls_files.h)
  // handed to the children as FLOTILLA_TLS_CERT/KEY/CA; "" = not given.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;
  // Hold each child's port until the launcher exits (children must bind with
  // SO_REUSEADDR/SO_REUSEPORT). false: release them just before the children
  // start, for programs that bind without those options.
  bool hold_ports = true;
  // Observability (docs/observability.md).
  std::string timeline;             // --timeline PATH: the job's merged timeline
  int timeline_max_mb = 0;          // bound per process (ring mode); 0 = none
  std::string timeline_steps;       // "FIRST-LAST": trace only these steps
  std::string dashboard;            // [HOST]:PORT of the live dashboard
  std::chrono::milliseconds dashboard_linger{0};  // keep serving it after the job ends
  bool dashboard_open = false;      // state and world-readable logs without the token
  int metrics_port = -1;            // the launcher's own /metrics; -1 = none
  // Where the launcher's and every process's /metrics listen (--metrics_host);
  // off loopback only when asked, and then HTTPS when the job has TLS.
  std::string metrics_host = "127.0.0.1";
  std::chrono::milliseconds stall_timeout{0};  // stop a job stalled this long; 0 = never
  std::string log_level;            // every process's log level ("" = inherited)
  std::string tee;                  // which processes stream to the console
  std::string log_prefix = "auto";  // "[rank N] " before streamed lines
  // The program and its arguments. A `.py` script runs under `python`
  // ("" = $FLOTILLA_PYTHON, else the build's interpreter), under the Paddle
  // compatibility switch with paddle_compat (launch/python_script.h).
  std::vector<std::string> command;
  std::string python;
  bool paddle_compat = false;
};

// True when any parameter-server option is set (Paddle's rule: any PS
// option selects ps mode).
bool HasPsOptions(const LaunchOptions& options);
// True when heter workers are asked for (--heter_workers/--heter_worker_num).
bool HasHeterOptions(const LaunchOptions& options);
// True when any elastic option is set.
bool HasElasticOptions(const LaunchOptions& options);

// Throws InvalidArgument naming the flag (and its variable), the value and
// the range for every port, count or size outside its range
// (CheckInRange, flotilla/common/strings.h): no wrap, no silent default.
void CheckRanges(const LaunchOptions& options);

// Decides the run mode as Paddle does: an explicit --run_mode wins, any PS
// option selects ps (ps-heter is ps with heter workers), otherwise
// collective. Throws InvalidArgument for an unknown mode, for PS options
// combined with --run_mode collective, for ps-heter without heter workers
// and for heter workers in elastic jobs, and as CheckRanges does.
RunMode SelectRunMode(const LaunchOptions& options);

// Fills options that Paddle's cluster environments provide when
// --use_paddlecloud is set (PADDLE_TRAINERS, POD_IP, PADDLE_PORT).
void ApplyPaddleCloudEnv(LaunchOptions& options);

// A launcher started as one task of a cluster engine (srun, mpirun, a
// PyTorchJob, Indexed Job or Kubeflow PaddleJob pod) with no layout of its
// own (no --ips, --master, --servers/--workers, --elastic_server,
// --use_paddlecloud): its task is one node of the job. From the
// role-resolution chain (flotilla/roles/role_env.h): --master from the chain's
// master (PADDLE_MASTER, MASTER_ADDR:MASTER_PORT, Slurm's first host),
// --nnodes from the engine's task count (else PADDLE_NNODES / SLURM_NNODES),
// --rank from the task's rank, --job_id from the chain. Options already
// given win. Returns a line saying what it took, or "" when nothing.
// Throws InvalidArgument when the engine's variables conflict.
std::string ApplyEngineEnv(LaunchOptions& options,
                           const std::function<std::optional<std::string>(const std::string&)>&
                               lookup);

}  // namespace flotilla::launch
