#include "observe_commands.h"

#include <poll.h>

#include <csignal>
#include <filesystem>
#include <iostream>

#include "flotilla/common/error.h"
#include "flotilla/common/strings.h"
#include "flotilla/launch/dashboard.h"
#include "flotilla/launch/signals.h"
#include "flotilla/trace/doctor.h"
#include "flotilla/trace/http_server.h"
#include "flotilla/trace/timeline_merge.h"

namespace flotilla::tools {

namespace fs = std::filesystem;

namespace {

struct ObserveArgs {
  std::string log_dir;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string output;
  std::vector<std::string> inputs;
};

// Prints "flotilla NAME: DIR is not a directory ..." unless it is one.
bool IsLogDir(const std::string& dir, const char* name) {
  if (fs::is_directory(dir)) return true;
  std::cerr << "flotilla " << name << ": " << dir
            << " is not a directory (expected a job's --log_dir)\n";
  return false;
}

int Doctor(const ObserveArgs& a) {
  if (!IsLogDir(a.log_dir, "doctor")) return 2;
  std::cout << trace::FormatDiagnosis(trace::Diagnose(fs::absolute(a.log_dir).string()));
  return 0;
}

// Serves until SIGINT/SIGTERM (blocked by main: read from a signalfd).
int Dashboard(const ObserveArgs& a) {
  CheckInRange(a.port, "--port", 0, kMaxPort, "0: any free port");
  if (!IsLogDir(a.log_dir, "dashboard")) return 2;
  launch::SignalFd signals;
  trace::HttpServer http(a.host, a.port);
  launch::ServeDashboard(http, fs::absolute(a.log_dir).lexically_normal().string());
  http.Start();
  std::cerr << "flotilla dashboard: http://" << a.host << ":" << http.port()
            << "/ (Ctrl-C stops)\n";
  while (true) {
    for (int sig : signals.Drain()) {
      if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) return 0;
    }
    pollfd fd{signals.fd(), POLLIN, 0};
    poll(&fd, 1, 1000);
  }
}

int Timeline(const ObserveArgs& a) {
  std::vector<std::string> files;
  for (const auto& in : a.inputs) {
    if (fs::is_directory(in)) {
      const std::string dir = fs::is_directory(fs::path(in) / "timeline") ? in + "/timeline" : in;
      for (const auto& f : trace::TimelineFiles(dir)) files.push_back(f);
    } else {
      files.push_back(in);
    }
  }
  const auto stats = trace::MergeTimelines(files, a.output);
  std::cout << a.output << ": " << stats.processes << " processes, " << stats.events
            << " events, " << stats.flows << " collectives linked\n";
  return 0;
}

template <typename Fn>
void Run(Fn fn, const ObserveArgs& a, int* code, const char* name) {
  try {
    *code = fn(a);
  } catch (const Error& e) {
    std::cerr << "flotilla " << name << ": " << e.what() << "\n";
    *code = 2;
  }
}

}  // namespace

void AddObserveCommands(CLI::App& app, int* exit_code) {
  static ObserveArgs args;
  CLI::App* doctor = app.add_subcommand(
      "doctor", "diagnose a hung or failed job from its log dir: which rank or server is stuck, "
                "in which collective or call, and what each process was doing");
  doctor->add_option("log_dir", args.log_dir, "the job's --log_dir")->required();
  doctor->callback([exit_code] { Run(Doctor, args, exit_code, "doctor"); });

  CLI::App* dash = app.add_subcommand(
      "dashboard", "serve a job's dashboard from its log dir (after or during the job)");
  dash->add_option("log_dir", args.log_dir, "the job's --log_dir")->required();
  dash->add_option("--host", args.host, "address to listen on")->capture_default_str();
  dash->add_option("--port", args.port, "port (0: any free port)")->capture_default_str();
  dash->callback([exit_code] { Run(Dashboard, args, exit_code, "dashboard"); });

  CLI::App* timeline = app.add_subcommand(
      "timeline", "merge per-process timelines (a log dir, its timeline/ directory, or files) "
                  "into one trace, as flotilla launch --timeline does at exit");
  timeline->add_option("output", args.output, "the merged trace to write")->required();
  timeline->add_option("inputs", args.inputs, "log dirs, timeline dirs or files")->required();
  timeline->callback([exit_code] { Run(Timeline, args, exit_code, "timeline"); });
}

}  // namespace flotilla::tools
