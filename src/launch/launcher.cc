#include "flotilla/launch/launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <optional>
#include <thread>
#include <type_traits>

#include "flotilla/comm/prefix_store.h"
#include "flotilla/comm/shm_cleanup.h"
#include "flotilla/comm/tcp_store.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"
#include "flotilla/common/safe_file.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/strings.h"
#include "flotilla/launch/signals.h"
#include "flotilla/trace/metrics.h"
#include "flotilla/roles/role_env.h"
#include "launch/elastic/elastic_rendezvous.h"
#include "launch/env_contract.h"
#include "launch/exit_status.h"
#include "launch/launcher_secret.h"
#include "launch/net_util.h"
#include "launch/node_plan.h"
#include "launch/observe.h"
#include "launch/python_script.h"
#include "launch/rendezvous.h"
#include "launch/report.h"
#include "launch/supervisor.h"

namespace flotilla::launch {

using roles::EnvLookup;
using roles::ProcessEnv;

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
  SafeDir::Create(log_dir, "--log_dir").WriteAtomic("endpoints.log", EndpointsLog(spec));
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
                                                        const LauncherSecret& secret,
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
    env.insert(env.end(), secret.child_env().begin(), secret.child_env().end());
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

// Runs `fn` — a phase with no child running that may block for long
// (meeting the other nodes, waiting for them at the end) — on a helper
// thread while this thread watches the launcher's signals: SIGINT, SIGTERM
// or SIGHUP ends the launcher at once with 128 + signal. There is nothing
// to stop in these phases; an elastic registration lapses with its lease.
template <typename Fn>
auto Interruptible(SignalFd& signals, const char* phase, Fn&& fn) -> decltype(fn()) {
  using Result = decltype(fn());
  std::optional<std::conditional_t<std::is_void_v<Result>, int, Result>> result;
  std::exception_ptr error;
  int done[2];
  FLOTILLA_CHECK(pipe2(done, O_CLOEXEC) == 0, Unavailable, "pipe2: ", std::strerror(errno));
  std::thread helper([&] {
    try {
      if constexpr (std::is_void_v<Result>) {
        fn();
        result = 0;
      } else {
        result.emplace(fn());
      }
    } catch (...) {
      error = std::current_exception();
    }
    close(done[1]);
  });
  while (true) {
    pollfd fds[2] = {{signals.fd(), POLLIN, 0}, {done[0], POLLIN, 0}};
    poll(fds, 2, -1);
    if (fds[1].revents != 0) break;
    for (int sig : signals.Drain()) {
      if (sig == SIGCHLD) continue;
      log::Warn("received {} while {}: exiting", SignalName(sig), phase);
      log::Flush();
      std::cerr << std::flush;
      std::_Exit(128 + sig);
    }
  }
  helper.join();
  close(done[0]);
  if (error) std::rethrow_exception(error);
  if constexpr (!std::is_void_v<Result>) return std::move(*result);
}

// --fault_tolerance step: the launcher tells the job's processes, through
// the job's store ("flotilla/ft/lost/<rank>", read by fleet's run_step),
// which trainer died, and reports at the end what the faults cost
// ("flotilla/ft/faults", "flotilla/ft/steps_lost", counted by the
// survivors when they re-form).
class FaultReporter {
 public:
  explicit FaultReporter(const LaunchOptions& options) : options_(options) {}

  // Connects to the world's store at once, so a loss is published without
  // a connection's delay.
  void OnWorld(const ClusterSpec& spec) {
    master_ = spec.master;
    store_.reset();
    WorldSize().Set(static_cast<double>(spec.trainers.size()));
    if (options_.fault_tolerance != "step") return;
    try {
      Store();
    } catch (const std::exception& e) {
      log::Warn("fault tolerance: the job's store is not reachable yet: {}", e.what());
    }
  }

  void Lost(const ProcessSpec& p, const std::string& what) {
    lost_.push_back(p.id);
    trace::MetricsRegistry::Global()
        .GetCounter("flotilla_faults_total", "Trainers lost and survived (--fault_tolerance step)")
        .Add(1);
    WorldSize().Add(-1);
    try {
      Store().setString(StrCat("lost/", p.id), StrCat(p.label(), " ", what));
      StepsLost().Set(static_cast<double>(Store().add("steps_lost", 0)));
    } catch (const std::exception& e) {
      log::Error("fault tolerance: cannot publish the loss of {}: {}", p.label(), e.what());
    }
  }

  // The last lines of a run that lost trainers.
  void Summary(const RunResult& result) {
    if (lost_.empty()) return;
    int64_t faults = 0, steps = 0;
    try {
      faults = Store().add("faults", 0);
      steps = Store().add("steps_lost", 0);
      StepsLost().Set(static_cast<double>(steps));
    } catch (const std::exception& e) {
      log::Warn("fault tolerance: cannot read the survivors' counts: {}", e.what());
    }
    std::vector<std::string> ranks;
    for (int r : lost_) ranks.push_back(std::to_string(r));
    if (result.exit_code != 0) {
      std::cout << "fault tolerance: the job failed after losing rank(s) [" << Join(ranks, ", ")
                << "] (" << faults << " re-formed around, costing " << steps << " step(s))"
                << std::endl;
      return;
    }
    std::cout << "fault tolerance: the job survived " << lost_.size() << " fault(s) (lost rank(s) ["
              << Join(ranks, ", ") << "]; " << faults << " re-formed around), costing " << steps
              << " step(s); no survivor was restarted" << std::endl;
  }

 private:
  static trace::Gauge& WorldSize() {
    return trace::MetricsRegistry::Global().GetGauge("flotilla_world_size",
                                                     "Trainers in the job's current world");
  }
  // Updated when a trainer is lost (the re-forms counted so far) and at the end.
  static trace::Gauge& StepsLost() {
    return trace::MetricsRegistry::Global().GetGauge(
        "flotilla_steps_lost_total", "Steps dropped and redone by re-forms (--fault_tolerance step)");
  }

  comm::Store& Store() {
    if (!store_) {
      comm::TCPStoreOptions o;
      o.timeout = std::chrono::seconds(5);
      o.connect_timeout = std::chrono::seconds(5);
      o.token = options_.job_secret;
      o.tls = JobTlsFiles(options_);
      store_ = std::make_shared<comm::PrefixStore>("flotilla/ft", comm::ConnectStore(master_, o));
    }
    return *store_;
  }

  const LaunchOptions& options_;
  std::string master_;
  std::shared_ptr<comm::Store> store_;
  std::vector<int> lost_;
};

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

int Launch(LaunchOptions options) {
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
  const LauncherSecret secret(options, RunsAlone(options, mode));
  EnvList extra_env = python.env;
  const EnvList tls = TlsChildEnv(options);
  extra_env.insert(extra_env.end(), tls.begin(), tls.end());
  options.job_secret = secret.secret();
  SignalFd signals;
  JobObserver observer(options);
  auto rendezvous = MakeRendezvous(options);
  SupervisorOptions supervise;
  supervise.log_dir = options.log_dir;
  supervise.grace_period = options.grace_period;
  supervise.poll_interval = std::min(options.poll_interval, std::chrono::milliseconds(100));
  supervise.relay_to_console = !options.quiet;
  supervise.tee = options.tee;
  supervise.log_prefix = options.log_prefix;
  supervise.hooks = observer.Hooks();
  FaultReporter faults(options);
  if (options.fault_tolerance == "step") {
    supervise.fault_tolerance_step = true;
    supervise.hooks.on_lost = [&](const ProcessSpec& p, const std::string& what) {
      faults.Lost(p, what);
    };
    extra_env.emplace_back("FLOTILLA_FAULT_TOLERANCE", "step");
  }
  Supervisor supervisor(supervise, signals);
  const ShmSweeper shm(options.job_id);
  // Fixed-size jobs run one world; elastic jobs join again when theirs changed.
  while (true) {
    World world = Interruptible(signals, "meeting the other nodes",
                                [&] { return rendezvous->Join(plan_node); });
    world.spec.job_id = options.job_id;
    observer.OnWorld(world.spec);
    WriteEndpointsLog(options.log_dir, world.spec);
    PrintBanner(options, mode, world.spec);
    faults.OnWorld(world.spec);
    if (!options.hold_ports) ports.clear();  // --release_ports: a short race instead of a takeover
    RunResult result;
    try {
      result = supervisor.Run(world.spec, options.command, *world.channel,
                              ChildEnvironments(world.spec, shm.key(), secret, observer, extra_env));
    } catch (const std::exception& e) {
      world.channel->Abort({world.spec.node_index, 1, e.what()});
      Interruptible(signals, "telling the other nodes", [&] { world.channel->Finish(); });
      throw;
    }
    shm.Sweep();  // every child of this world has exited
    int code = Finish(world.spec, result);
    faults.Summary(result);
    const bool again = result.launcher_signal == 0 &&
                       Interruptible(signals, "waiting for the job's next world",
                                     [&] { return world.channel->Restart(code); });
    if (again) observer.OnRestart(code);
    Interruptible(signals, "waiting for the other nodes to finish",
                  [&] { world.channel->Finish(); });
    if (!again) {
      observer.Finish();
      observer.Linger(signals);
      return code;
    }
  }
}

}  // namespace flotilla::launch
