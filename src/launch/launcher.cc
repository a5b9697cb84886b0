#include "launch/launcher.h"

#include <iostream>
#include <thread>

#include "comm/shm/shm_names.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"
#include "flotilla/common/logging.h"
#include "launch/elastic/elastic_rendezvous.h"
#include "launch/env_contract.h"
#include "launch/net_util.h"
#include "launch/node_plan.h"
#include "launch/observe.h"
#include "launch/python_script.h"
#include "launch/report.h"
#include "launch/roles/role_env.h"
#include "launch/signals.h"
#include "launch/supervisor.h"

namespace flotilla::launch {

namespace {

// Holds every local port until the launcher exits (see PortReservation).
std::vector<PortReservation> ReservePorts(NodePlan& plan) {
  std::vector<PortReservation> held;
  for (auto& p : plan.local) {
    held.push_back(PortReservation::Reserve(p.host, p.port));
    p.port = held.back().port();
  }
  return held;
}

void WriteEndpointsLog(const std::string& log_dir, const ClusterSpec& spec) {
  MakeDirs(log_dir);
  WriteFileAtomic(log_dir + "/endpoints.log", EndpointsLog(spec));
}

// Removes this job's shared-memory segments when the launcher leaves Launch,
// however it leaves (a child killed during setup cannot), and those of dead
// jobs when it starts.
class ShmSweeper {
 public:
  explicit ShmSweeper(const std::string& job) : key_(comm::shm::JobKeyOfThisProcess(job)) {
    comm::shm::RemoveStaleSegments();
  }
  ~ShmSweeper() { Sweep(); }
  void Sweep() const { comm::shm::RemoveJobSegments(key_); }
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

std::vector<std::vector<std::string>> ChildEnvironments(const ClusterSpec& spec,
                                                        const std::string& shm_key,
                                                        const JobObserver& observer,
                                                        const EnvList& extra) {
  const auto inherited = CurrentEnvironment();
  const auto local = spec.LocalProcesses();
  const EnvList threads = ThreadDefaults(inherited, static_cast<int>(local.size()),
                                         static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<std::vector<std::string>> envs;
  for (const auto& p : local) {
    EnvList env = ContractEnv(spec, p);
    env.insert(env.end(), threads.begin(), threads.end());
    env.emplace_back("FLOTILLA_SHM_JOB", shm_key);
    env.insert(env.end(), extra.begin(), extra.end());
    const EnvList observed = observer.ChildEnv(p);
    env.insert(env.end(), observed.begin(), observed.end());
    envs.push_back(ChildEnvironment(inherited, env));
  }
  return envs;
}

void PrintBanner(const LaunchOptions& options, RunMode mode, const ClusterSpec& spec) {
  if (options.quiet) return;
  std::string text = ConfigurationBlock(options, mode);
  auto local = spec.LocalProcesses();
  if (!local.empty()) {
    text += EnvTable(StrCat("Distributed Envs (", local.front().label(), ")"),
                     ContractEnv(spec, local.front()));
  }
  std::cerr << text << std::flush;
}

int Finish(const ClusterSpec& spec, const RunResult& result) {
  std::string report = AbortReport(spec, result);
  if (!report.empty()) std::cerr << report << std::flush;
  if (result.peer_abort) {
    std::cerr << "The job was stopped because of node " << result.peer_abort->node << ": "
              << result.peer_abort->message << "; see the logs on that node.\n";
  }
  return result.exit_code;
}

}  // namespace

int Launch(LaunchOptions options, const RendezvousFactory& make_rendezvous) {
  BlockLauncherSignals();  // idempotent; main() already did it before any thread
  ApplyPaddleCloudEnv(options);
  if (std::string engine = ApplyEngineEnv(options, ProcessEnv()); !engine.empty()) {
    log::Info("flotilla launch: {}", engine);
  }
  const RunMode mode = SelectRunMode(options);
  if (options.scale > 0) return ScaleElasticJob(options);
  const EnvLookup env = ProcessEnv();
  PythonLaunch python = PythonCommand(options, PythonInterpreter(options, env("FLOTILLA_PYTHON")),
                                      InTreePackageRoot("/proc/self/exe"), env("PYTHONPATH"));
  options.command = std::move(python.command);
  std::vector<PortReservation> ports;  // held until the launcher exits
  NodePlanner plan_node = [&](const NodeLayout& layout) {
    NodePlan plan = PlanNode(options, mode, layout);
    ports = ReservePorts(plan);
    return plan;
  };
  SignalFd signals;
  JobObserver observer(options);
  auto rendezvous = make_rendezvous(options);
  SupervisorOptions supervise;
  supervise.log_dir = options.log_dir;
  supervise.grace_period = options.grace_period;
  supervise.poll_interval = std::min(options.poll_interval, std::chrono::milliseconds(100));
  supervise.relay_to_console = !options.quiet;
  supervise.tee = options.tee;
  supervise.log_prefix = options.log_prefix;
  supervise.hooks = observer.Hooks();
  Supervisor supervisor(supervise, signals);
  const ShmSweeper shm(options.job_id);
  // Fixed-size jobs run one world; elastic jobs join again when theirs changed.
  while (true) {
    World world = rendezvous->Join(plan_node);
    world.spec.job_id = options.job_id;
    observer.OnWorld(world.spec);
    WriteEndpointsLog(options.log_dir, world.spec);
    PrintBanner(options, mode, world.spec);
    if (!options.hold_ports) ports.clear();  // --release_ports: a short race instead of a takeover
    RunResult result;
    try {
      result = supervisor.Run(world.spec, options.command, *world.channel,
                              ChildEnvironments(world.spec, shm.key(), observer, python.env));
    } catch (const std::exception& e) {
      world.channel->Abort({world.spec.node_index, 1, e.what()});
      world.channel->Finish();
      throw;
    }
    shm.Sweep();  // every child of this world has exited
    int code = Finish(world.spec, result);
    const bool again = result.launcher_signal == 0 && world.channel->Restart(code);
    if (again) observer.OnRestart(code);
    world.channel->Finish();
    if (!again) {
      observer.Finish();
      observer.Linger(signals);
      return code;
    }
  }
}

}  // namespace flotilla::launch
