#include "launch/observe.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "flotilla/comm/tcp_store.h"
#include "flotilla/comm/trace_clock.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/strings.h"
#include "flotilla/launch/dashboard.h"
#include "flotilla/launch/launcher.h"
#include "flotilla/trace/doctor.h"
#include "flotilla/trace/dump.h"
#include "flotilla/trace/http_server.h"
#include "flotilla/trace/metrics.h"
#include "flotilla/trace/process_info.h"
#include "flotilla/trace/timeline_merge.h"
#include "flotilla/trace/trace.h"
#include "launch/launcher_secret.h"

namespace flotilla::launch {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

const char* const kChildTraceEnv[] = {
    "FLOTILLA_TIMELINE", "FLOTILLA_TIMELINE_MAX_MB", "FLOTILLA_TIMELINE_STEPS",
    "FLOTILLA_TRACE_LABEL", "FLOTILLA_FLIGHT_DIR", "FLOTILLA_METRICS_DIR",
    "FLOTILLA_STALL_TIMEOUT"};

// "host:port" / ":port" → host (default 127.0.0.1: the dashboard shows
// logs, so it is not exposed unless asked) and port.
std::pair<std::string, int> ParseAddress(const std::string& text, const char* what) {
  const size_t colon = text.rfind(':');
  const std::string host = colon == std::string::npos || colon == 0 ? "127.0.0.1"
                                                                    : text.substr(0, colon);
  const std::string port = colon == std::string::npos ? text : text.substr(colon + 1);
  const int64_t p = ParseIntInRange(port, StrCat(what, " '", text, "' (expected [HOST]:PORT) port"),
                                    0, kMaxPort, "0: any free port");
  return {host, static_cast<int>(p)};
}

// True when `pid` is stopped (SIGSTOP, SIGTSTP): it can neither dump nor run.
bool Stopped(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() &&
         (stat[paren + 2] == 'T' || stat[paren + 2] == 't');
}

int64_t MtimeNs(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return -1;
  return int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

void ClearLauncherTraceEnv() {
  for (const char* name : kChildTraceEnv) unsetenv(name);
}

JobObserver::JobObserver(const LaunchOptions& options)
    : options_(options),
      log_dir_(fs::absolute(options.log_dir).lexically_normal().string()),
      health_(flight_dir()) {
  if (!options_.timeline_steps.empty()) {  // checked here, before any process starts
    int64_t first = 0, last = 0;
    trace::ParseStepWindow("--timeline_steps", options_.timeline_steps, &first, &last);
  }
  FLOTILLA_ENFORCE(options_.timeline_max_mb >= 0, "--timeline_max_mb must be >= 0, got ",
                   options_.timeline_max_mb);
  for (const std::string& dir : {flight_dir(), metrics_dir(), timeline_dir()}) RemoveAll(dir);
  MakeDirs(flight_dir());
  MakeDirs(metrics_dir());
  if (!options_.dashboard.empty() || options_.metrics_port >= 0) {
    const auto [host, port] = options_.dashboard.empty()
                                  ? std::make_pair(std::string("0.0.0.0"), options_.metrics_port)
                                  : ParseAddress(options_.dashboard, "--dashboard");
    http_ = std::make_unique<trace::HttpServer>(host, port);
    http_->SetHealthCheck([this] { return health_.Live(); });
    http_->Handle("/readyz", [this](const trace::HttpRequest&) {
      const auto [ready, text] = health_.Ready();
      return trace::HttpReply{ready ? 200 : 503, "text/plain; charset=utf-8", text + "\n"};
    });
    if (!options_.dashboard.empty()) ServeDashboard(*http_, log_dir_);
    http_->Start();
    std::cerr << "flotilla launch: " << (options_.dashboard.empty() ? "metrics" : "dashboard")
              << " on http://" << (host == "0.0.0.0" ? "127.0.0.1" : host) << ":" << http_->port()
              << "/\n";
  }
}

JobObserver::~JobObserver() = default;

void JobObserver::OnWorld(const ClusterSpec& spec) {
  trace::SetSelf(trace::ParseLabel(StrCat("launcher ", spec.node_index)));
  trace::InitProcess();
  if (!options_.timeline.empty() && !timeline_started_) {
    trace::StartTimeline(timeline_dir() + "/launcher" + std::to_string(spec.node_index) + ".json");
    timeline_started_ = true;
  }
  trace::Instant(trace::Category::kElastic, FLOTILLA_TRACE_NAME("world"), "generation",
                 spec.generation, "nodes", static_cast<int64_t>(spec.nodes.size()));
  if (options_.timeline.empty() || spec.master.empty()) return;
  try {
    comm::TCPStoreOptions store_options;
    store_options.token = options_.job_secret;
    store_options.tls = JobTlsFiles(options_);
    auto store = comm::ConnectStore(spec.master, store_options);
    if (spec.node_index == 0) {
      trace::SetClockOffset({0, 0});  // the reference
      if (!clock_) clock_ = std::make_unique<comm::ClockResponder>(store);
    } else {
      comm::AlignTraceClock(*store);
    }
  } catch (const Error& e) {
    log::Warn("timeline clocks not aligned: {}", e.what());
  }
}

void JobObserver::OnRestart(int exit_code) {
  health_.Joining(StrCat("restarting after a membership change (exit code ", exit_code, ")"));
  trace::Instant(trace::Category::kElastic, FLOTILLA_TRACE_NAME("membership change"), "exit_code",
                 exit_code);
}

EnvList JobObserver::ChildEnv(const ProcessSpec& p) const {
  const trace::ProcessInfo info = trace::ParseLabel(p.label());
  EnvList env = {{"FLOTILLA_TRACE_LABEL", p.label()},
                 {"FLOTILLA_FLIGHT_DIR", flight_dir()},
                 {"FLOTILLA_METRICS_DIR", metrics_dir()}};
  if (!options_.timeline.empty()) {
    env.emplace_back("FLOTILLA_TIMELINE", timeline_dir() + "/" + info.file_stem() + ".json");
    if (options_.timeline_max_mb > 0) {
      env.emplace_back("FLOTILLA_TIMELINE_MAX_MB", std::to_string(options_.timeline_max_mb));
    }
    if (!options_.timeline_steps.empty()) {
      env.emplace_back("FLOTILLA_TIMELINE_STEPS", options_.timeline_steps);
    }
  }
  if (options_.stall_timeout.count() > 0) {
    env.emplace_back("FLOTILLA_STALL_TIMEOUT", StrCat(options_.stall_timeout.count() / 1000.0));
  }
  if (!options_.log_level.empty()) env.emplace_back("FLOTILLA_LOG_LEVEL", options_.log_level);
  if (options_.metrics_port >= 0) env.emplace_back("FLOTILLA_METRICS_PORT", "0");
  return env;
}

SupervisorHooks JobObserver::Hooks() {
  SupervisorHooks h;
  h.on_status = [this](const std::vector<ProcessView>& v) { WriteStatus(v); };
  if (options_.stall_timeout.count() > 0) h.stalled = [this] { return Stalled(); };
  h.diagnose = [this](const std::vector<ProcessView>& v) { return Diagnose(v); };
  return h;
}

void JobObserver::WriteStatus(const std::vector<ProcessView>& views) {
  health_.Status(views);
  nlohmann::json processes = nlohmann::json::array();
  std::map<std::string, int> states;
  for (const ProcessView& v : views) {
    const std::string label = v.spec.label();
    // A process stopped when the job was stopped stays "stopped" afterwards,
    // so the doctor run later says what the one run at the abort said.
    if (v.running && Stopped(v.pid)) seen_stopped_.insert(label);
    const bool stopped = seen_stopped_.count(label) > 0;
    const std::string state = stopped && v.state != "failed" ? "stopped" : v.state;
    std::string status = v.status;
    if (stopped) {
      status = v.running ? "stopped by a signal (SIGSTOP)"
                         : "stopped by a signal (SIGSTOP) until the job was stopped";
    }
    ++states[state];
    processes.push_back({{"label", v.spec.label()},
                         {"role", RoleName(v.spec.role)},
                         {"id", v.spec.id},
                         {"node", v.spec.node},
                         {"pid", v.pid},
                         {"endpoint", v.spec.endpoint()},
                         {"log", v.log_path},
                         {"state", state},
                         {"status", status}});
  }
  for (const char* s : {"running", "exited", "failed", "stopped"}) {
    trace::MetricsRegistry::Global()
        .GetGauge("flotilla_job_processes", "This node's processes by state", {{"state", s}})
        .Set(states[s]);
  }
  const nlohmann::json status = {{"updated_ms", trace::WallNs() / 1000000},
                                 {"log_dir", log_dir_},
                                 {"stall_timeout_s", options_.stall_timeout.count() / 1000.0},
                                 {"processes", std::move(processes)}};
  try {
    WriteFileAtomic(log_dir_ + "/job_status.json", status.dump(1) + "\n");
  } catch (const Error& e) {
    log::Warn("cannot write the job status: {}", e.what());
  }
}

// A child's stall marker (written when a collective or call has been
// pending for FLOTILLA_STALL_TIMEOUT), checked four times a second.
std::optional<std::string> JobObserver::Stalled() {
  const auto now = Clock::now();
  if (now < next_stall_check_) return std::nullopt;
  next_stall_check_ = now + std::chrono::milliseconds(250);
  std::string what = FirstStallMarker(flight_dir());
  if (what.empty()) return std::nullopt;
  return what;
}

// SIGUSR1 to every child whose trace runtime listens (it wrote its pid
// file), then waits up to 1.5 s for their dumps.
void JobObserver::CollectDumps(const std::vector<ProcessView>& views) {
  const int64_t asked = trace::WallNs() - 20000000;  // file times are coarse
  std::vector<std::string> awaited;
  for (const ProcessView& v : views) {
    if (!v.running || Stopped(v.pid)) continue;
    const std::string stem = trace::ParseLabel(v.spec.label()).file_stem();
    std::string pid;
    try {
      pid = Trim(ReadFile(flight_dir() + "/" + stem + ".pid"));
    } catch (const Error&) {
      continue;  // not listening: SIGUSR1 would kill it
    }
    if (pid != std::to_string(v.pid) || kill(v.pid, SIGUSR1) != 0) continue;
    awaited.push_back(trace::FlightDumpPath(flight_dir(), v.spec.label()));
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(1500);
  auto all_fresh = [&] {
    return std::all_of(awaited.begin(), awaited.end(),
                       [&](const std::string& p) { return MtimeNs(p) >= asked; });
  };
  while (!all_fresh() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string JobObserver::Diagnose(const std::vector<ProcessView>& views) {
  CollectDumps(views);
  WriteStatus(views);
  const trace::Diagnosis d = trace::Diagnose(log_dir_);
  std::string out;
  for (const auto& f : d.findings) out += f + "\n";
  if (!d.details.empty()) out += "where each process was:\n";
  for (const auto& s : d.details) out += "  " + s + "\n";
  return Trim(out);
}

void JobObserver::Linger(SignalFd& signals) {
  if (!http_ || options_.dashboard.empty() || options_.dashboard_linger.count() <= 0) return;
  std::cerr << "flotilla launch: the dashboard stays up for "
            << options_.dashboard_linger.count() / 1000.0 << " s (Ctrl-C ends it)\n";
  const auto deadline = Clock::now() + options_.dashboard_linger;
  while (Clock::now() < deadline) {
    pollfd fd{signals.fd(), POLLIN, 0};
    poll(&fd, 1, 200);
    for (int sig : signals.Drain()) {
      if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) return;
    }
  }
}

void JobObserver::Finish() {
  clock_.reset();
  if (options_.timeline.empty() || !timeline_started_) return;
  trace::StopTimeline();
  try {
    const auto stats =
        trace::MergeTimelines(trace::TimelineFiles(timeline_dir()), options_.timeline);
    std::cerr << "flotilla launch: timeline " << options_.timeline << " (" << stats.processes
              << " processes, " << stats.events << " events, " << stats.flows
              << " collectives linked, clock error <= " << stats.max_clock_error_ns / 1000
              << " us)\n";
  } catch (const Error& e) {
    std::cerr << "flotilla launch: no timeline written: " << e.what() << "\n";
  }
}

}  // namespace flotilla::launch
