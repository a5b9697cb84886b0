#include "launch_command.h"

#include <chrono>
#include <cmath>
#include <cstdlib>

#include "flotilla/common/enforce.h"
#include "flotilla/common/env.h"

namespace flotilla::tools {

namespace {

// Seconds given on the command line, kept until FinishLaunchOptions.
struct Durations {
  double grace_period = 5.0;
  double rendezvous_timeout = 120.0;
  double node_timeout = 10.0;
  double elastic_timeout = 10.0;
  int elastic_ttl = 3;
  double stall_timeout = 0;
  double dashboard_linger = 0;
};
Durations g_durations;

void AddBaseOptions(CLI::App& c, launch::LaunchOptions& o) {
  c.add_option("--log_dir", o.log_dir, "directory of workerlog.N, serverlog.N, endpoints.log")
      ->envname("PADDLE_LOG_DIR")->capture_default_str()->group("Base Parameters");
  c.add_option("--run_mode", o.run_mode, "collective | ps | ps-heter (default: ps when a "
               "parameter-server option is given, else collective)")
      ->envname("PADDLE_RUN_MODE")->group("Base Parameters");
  c.add_option("--devices,--gpus,--selected_gpus,--seletected_gpus", o.devices,
               "comma list of device ids (CPU slots on a CPU machine); one process per entry, "
               "passed as FLAGS_selected_gpus and PADDLE_LOCAL_DEVICE_IDS")
      ->envname("PADDLE_DEVICES")->group("Base Parameters");
  c.add_option("--nproc_per_node", o.nproc_per_node, "processes per node (default: one per "
               "device, or 1); devices are split evenly among them")
      ->envname("PADDLE_NPROC_PER_NODE")->group("Base Parameters");
  c.add_option("--grace_period", g_durations.grace_period, "seconds between SIGTERM and "
               "SIGKILL when the job stops")
      ->envname("FLOTILLA_GRACE_PERIOD")->capture_default_str()->group("Base Parameters");
  c.add_option("--fault_tolerance", o.fault_tolerance, "none: a failed trainer stops the job "
               "(elastic jobs restart it); step: the survivors keep their processes, drop the "
               "step in flight and re-form in a smaller world (docs/elastic.md)")
      ->envname("FLOTILLA_FAULT_TOLERANCE")->check(CLI::IsMember({"none", "step"}))
      ->capture_default_str()->group("Base Parameters");
  c.add_flag("--quiet", o.quiet, "print neither the configuration nor rank 0's output")
      ->group("Base Parameters");
  c.add_option("--python", o.python, "interpreter of a .py training script (default: "
               "$FLOTILLA_PYTHON, else the one Flotilla was built against)")
      ->group("Base Parameters");
  c.add_flag("--paddle_compat", o.paddle_compat, "run the .py training script under the Paddle "
             "compatibility switch (python3 -m flotilla.paddle_compat): `import paddle` is served "
             "by Flotilla")
      ->group("Base Parameters");
  c.add_flag("--insecure", o.insecure, "run without a job secret: the job's store and "
             "parameter servers accept anyone who reaches their ports (docs/security.md)")
      ->envname("FLOTILLA_INSECURE")->group("Base Parameters");
  c.add_option("--tls_cert", o.tls_cert, "PEM certificate of this node's processes: the "
               "parameter servers serve gRPC over TLS with it and trainers present it "
               "(with --tls_key; passed on as FLOTILLA_TLS_CERT)")
      ->envname("FLOTILLA_TLS_CERT")->group("Base Parameters");
  c.add_option("--tls_key", o.tls_key, "PEM private key of --tls_cert (FLOTILLA_TLS_KEY)")
      ->envname("FLOTILLA_TLS_KEY")->group("Base Parameters");
  c.add_option("--tls_ca", o.tls_ca, "PEM CA certificate(s) peers are checked against; with it "
               "the servers demand client certificates the CA signed (mutual TLS; "
               "FLOTILLA_TLS_CA)")
      ->envname("FLOTILLA_TLS_CA")->group("Base Parameters");
  c.add_flag("--release_ports{false}", o.hold_ports, "release the reserved ports just before "
             "the children start (for programs that bind without SO_REUSEADDR/SO_REUSEPORT)")
      ->envname("FLOTILLA_RELEASE_PORTS")->group("Base Parameters");
}

void AddCollectiveOptions(CLI::App& c, launch::LaunchOptions& o) {
  c.add_option("--ips,--cluster_node_ips", o.ips, "comma list of every node's IP, the same "
               "order on every node; node index = position")
      ->envname("PADDLE_IPS")->capture_default_str()->group("Collective Parameters");
  c.add_option("--host,--node_ip", o.host, "this node's IP (default: the entry of --ips that "
               "is one of this machine's addresses)")
      ->envname("POD_IP")->group("Collective Parameters");
  c.add_option("--nnodes", o.nnodes, "number of nodes; checked against --ips")
      ->envname("PADDLE_NNODES")->group("Collective Parameters");
  c.add_option("--started_port,--start_port", o.started_port, "first trainer port on each node "
               "(local rank i uses started_port+i); default: free ports held by the launcher")
      ->envname("PADDLE_START_PORT")->group("Collective Parameters");
  c.add_option("--master", o.master, "HOST:PORT where the nodes meet instead of --ips (with "
               "--nnodes): the node that has HOST hosts the store there and is node 0")
      ->group("Collective Parameters");
  c.add_option("--rank", o.node_rank, "with --master: this node's index (default: in order of "
               "arrival)")->envname("PADDLE_RANK")->group("Collective Parameters");
  c.add_option("--master_port", o.master_port, "port of the rendezvous store (PADDLE_MASTER) "
               "on node 0; default 6070 for multi-node jobs, any free port on one node")
      ->envname("PADDLE_MASTER_PORT")->group("Collective Parameters");
  c.add_option("--rendezvous_timeout", g_durations.rendezvous_timeout, "seconds to wait for "
               "node 0's store and for every node to join")
      ->envname("FLOTILLA_RENDEZVOUS_TIMEOUT")->capture_default_str()
      ->group("Collective Parameters");
  c.add_option("--node_timeout", g_durations.node_timeout, "seconds without a heartbeat after "
               "which another node counts as lost and the job stops")
      ->envname("FLOTILLA_NODE_TIMEOUT")->capture_default_str()->group("Collective Parameters");
  c.add_flag("--use_paddlecloud", o.use_paddlecloud, "take nodes, this node and the first port "
             "from PADDLE_TRAINERS, POD_IP, PADDLE_PORT")
      ->group("Collective Parameters");
}

void AddPsOptions(CLI::App& c, launch::LaunchOptions& o) {
  const char* g = "Parameter Server Parameters";
  c.add_option("--servers", o.servers, "server endpoints ip:port,... (multi-node)")
      ->envname("PADDLE_SERVERS_ENDPOINTS")->group(g);
  c.add_option("--workers,--trainers", o.workers, "worker endpoints ip[:port],... (multi-node)")
      ->envname("PADDLE_TRAINERS_ENDPOINTS")->group(g);
  c.add_option("--server_num", o.server_num, "servers on this machine (simulation)")
      ->envname("PADDLE_SERVER_NUM")->group(g);
  c.add_option("--worker_num,--trainer_num", o.worker_num, "workers on this machine (simulation)")
      ->envname("PADDLE_TRAINER_NUM")->group(g);
  c.add_option("--heter_workers", o.heter_workers, "heter worker endpoints ip:port,... (multi-node "
               "ps-heter: they run the dense part of the program)")->group(g);
  c.add_option("--heter_worker_num", o.heter_worker_num, "heter workers on this machine "
               "(simulation)")->group(g);
  c.add_option("--http_port", o.http_port, "port of the rendezvous store in ps mode "
               "(PADDLE_GLOO_HTTP_ENDPOINT)")->envname("PADDLE_GLOO_PORT")->group(g);
}

void AddElasticOptions(CLI::App& c, launch::LaunchOptions& o) {
  const char* g = "Elastic Parameters";
  c.add_option("--elastic_server", o.elastic_server, "etcd endpoints etcd://HOST:PORT[,HOST:PORT...] (turns the job elastic)")
      ->envname("PADDLE_ELASTIC_SERVER")->group(g);
  c.add_option("--job_id", o.job_id, "unique job id")->envname("PADDLE_JOB_ID")->group(g);
  c.add_option("--np", o.np, "nodes: N (fault tolerant: wait for a replacement) or MIN:MAX "
               "(elastic)")
      ->envname("PADDLE_ELASTIC_NP")->group(g);
  c.add_option("--elastic_ttl", g_durations.elastic_ttl, "seconds of a node's lease: a lost node "
               "is noticed this long after its launcher died")
      ->envname("FLOTILLA_ELASTIC_TTL")->capture_default_str()->check(CLI::PositiveNumber)->group(g);
  // Paddle's PADDLE_ELASTIC_TTL and PADDLE_ELASTIC_TIMEOUT are read too (ApplyPaddleElasticEnv).
  c.add_option("--elastic_timeout", g_durations.elastic_timeout, "seconds the first world waits "
               "for MAX nodes once MIN are there")
      ->envname("FLOTILLA_ELASTIC_TIMEOUT")->capture_default_str()->group(g);
  c.add_option("--scale", o.scale, "set the running job's size to N nodes (within its --np "
               "MIN:MAX) and exit; starts no program")
      ->envname("PADDLE_ELASTIC_SCALE")->group(g);
  c.add_flag("--force", o.force, "clear a stale job's keys in etcd before joining")->envname("PADDLE_ELASTIC_FORCE")->group(g);
}

void AddObservabilityOptions(CLI::App& c, launch::LaunchOptions& o) {
  const char* g = "Observability (docs/observability.md)";
  c.add_option("--timeline", o.timeline, "write the job's timeline (Chrome trace JSON for Perfetto "
               "or chrome://tracing) to this file when it ends; per-process files go to "
               "LOG_DIR/timeline")
      ->envname("FLOTILLA_TIMELINE")->group(g);
  c.add_option("--timeline_max_mb", o.timeline_max_mb, "bound each process's timeline: past it, "
               "the oldest half is dropped (ring mode keeps the last seconds that fit)")
      ->check(CLI::NonNegativeNumber)->group(g);
  c.add_option("--timeline_steps", o.timeline_steps, "trace only steps FIRST-LAST (e.g. 100-120)")
      ->group(g);
  c.add_option("--dashboard", o.dashboard, "serve a live job dashboard at [HOST]:PORT (host "
               "default 127.0.0.1; 0.0.0.0 to share it); also serves /metrics and /healthz; its "
               "state and logs need the login URL it prints")
      ->group(g);
  c.add_option("--dashboard_linger", g_durations.dashboard_linger, "seconds the dashboard stays "
               "up after the job ended (Ctrl-C ends it sooner); `flotilla dashboard LOG_DIR` "
               "serves it any time later")
      ->check(CLI::NonNegativeNumber)->group(g);
  c.add_flag("--dashboard_open", o.dashboard_open, "serve the dashboard's state and logs "
             "without its token (logs only when every local user may read them); by default "
             "they need the login URL the launcher prints (docs/security.md)")
      ->group(g);
  c.add_option("--metrics_port", o.metrics_port, "serve the launcher's Prometheus /metrics, "
               "/healthz and /readyz on this port of --metrics_host (0: any free port); every "
               "process then serves its own on a free port, listed in LOG_DIR/metrics/*.url")
      ->group(g);
  c.add_option("--metrics_host", o.metrics_host, "address /metrics listens on, the launcher's "
               "and every process's (0.0.0.0: every interface, for a scraper on another host; "
               "off loopback, a job with --tls_* serves HTTPS)")
      ->capture_default_str()->group(g);
  c.add_option("--stall_timeout", g_durations.stall_timeout, "seconds a collective or "
               "parameter-server call may stay pending before the job counts as hung: every "
               "process dumps its flight recorder and the job stops with the diagnosis "
               "(exit code 124); 0: never")
      ->envname("FLOTILLA_STALL_TIMEOUT")->check(CLI::NonNegativeNumber)->group(g);
  c.add_option("--log_level", o.log_level, "log level of the launcher and every process "
               "(trace, debug, info, warn, error, off)")
      ->envname("FLOTILLA_LOG_LEVEL")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->group(g);
  c.add_option("--tee", o.tee, "which processes stream their output to the console: all, none, "
               "or a comma list of ranks and labels (\"0,2\", \"server 1\"); default: the "
               "first local trainer")
      ->group(g);
  c.add_option("--log_prefix", o.log_prefix, "prefix streamed lines with \"[rank N] \": auto "
               "(when several processes stream), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))->capture_default_str()->group(g);
}

// Seconds in Paddle's variable `name`; throws InvalidArgument naming it
// unless it is a number of at least `least`.
double PaddleSeconds(const char* name, const std::string& value, double least) {
  char* end = nullptr;
  const double seconds = std::strtod(value.c_str(), &end);
  FLOTILLA_CHECK(!value.empty() && *end == '\0' && seconds >= least && std::isfinite(seconds), InvalidArgument,
                 "environment variable ", name, "='", value, "' is not a number of seconds of at least ", least);
  return seconds;
}

// Paddle's PADDLE_ELASTIC_TTL / PADDLE_ELASTIC_TIMEOUT, for the durations
// neither the command line nor Flotilla's own variable gave.
void ApplyPaddleElasticEnv(const CLI::App& c) {
  if (auto ttl = env::Get("PADDLE_ELASTIC_TTL"); ttl && c.count("--elastic_ttl") == 0) {
    const double seconds = PaddleSeconds("PADDLE_ELASTIC_TTL", *ttl, 1);
    FLOTILLA_CHECK(seconds == std::floor(seconds), InvalidArgument, "environment variable PADDLE_ELASTIC_TTL='",
                   *ttl, "' must be a whole number of seconds");
    g_durations.elastic_ttl = static_cast<int>(seconds);
  }
  if (auto timeout = env::Get("PADDLE_ELASTIC_TIMEOUT"); timeout && c.count("--elastic_timeout") == 0) {
    g_durations.elastic_timeout = PaddleSeconds("PADDLE_ELASTIC_TIMEOUT", *timeout, 0);
  }
}

}  // namespace

CLI::App* AddLaunchCommand(CLI::App& app, const std::string& name, bool ps_only,
                           launch::LaunchOptions& o) {
  g_durations = Durations{};
  CLI::App* c = app.add_subcommand(
      name, ps_only ? "start a parameter-server job: servers and workers"
                    : "start a collective or parameter-server job on one or many nodes");
  // Everything from the program name on belongs to the program.
  c->prefix_command();
  c->description(StrCat(c->get_description(), "\nusage: flotilla ", name,
                        " [OPTIONS] training_script [training_script_args...]"));
  c->footer("Every option may also come from the environment variable shown beside it.\n"
            "See docs/cli.md and docs/env.md.");
  AddBaseOptions(*c, o);
  AddCollectiveOptions(*c, o);
  AddPsOptions(*c, o);
  AddElasticOptions(*c, o);
  AddObservabilityOptions(*c, o);
  return c;
}

void FinishLaunchOptions(CLI::App& c, bool ps_only, launch::LaunchOptions& o) {
  ApplyPaddleElasticEnv(c);
  o.command = c.remaining();
  if (!o.command.empty() && o.command.front() == "--") o.command.erase(o.command.begin());
  o.grace_period = std::chrono::milliseconds(static_cast<int64_t>(g_durations.grace_period * 1000));
  o.rendezvous_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(g_durations.rendezvous_timeout * 1000));
  o.node_timeout = std::chrono::milliseconds(static_cast<int64_t>(g_durations.node_timeout * 1000));
  o.elastic_ttl = std::chrono::seconds(g_durations.elastic_ttl);
  o.elastic_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(g_durations.elastic_timeout * 1000));
  o.stall_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(g_durations.stall_timeout * 1000));
  o.dashboard_linger =
      std::chrono::milliseconds(static_cast<int64_t>(g_durations.dashboard_linger * 1000));
  if (o.job_id.empty()) o.job_id = env::GetOr("PADDLE_ELASTIC_JOB_ID", "");
  if (ps_only && o.run_mode.empty()) o.run_mode = "ps";
}

}  // namespace flotilla::tools
