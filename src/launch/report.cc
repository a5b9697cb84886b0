#include "launch/report.h"

#include <algorithm>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"

namespace flotilla::launch {

namespace {

std::string Str(int v) { return std::to_string(v); }
std::string Str(bool v) { return v ? "True" : "False"; }
std::string Str(std::chrono::milliseconds ms) { return StrCat(ms.count() / 1000.0, "s"); }
std::string Str(const std::string& s) { return s.empty() ? "None" : s; }

std::vector<std::pair<std::string, std::string>> OptionValues(const LaunchOptions& o,
                                                              RunMode mode) {
  return {
      {"devices", Str(o.devices)}, {"elastic_server", Str(o.elastic_server)},
      {"force", Str(o.force)}, {"grace_period", Str(o.grace_period)},
      {"heter_worker_num", Str(o.heter_worker_num)}, {"heter_workers", Str(o.heter_workers)},
      {"host", Str(o.host)},
      {"http_port", Str(o.http_port)}, {"ips", Str(o.ips)}, {"job_id", Str(o.job_id)},
      {"log_dir", Str(o.log_dir)}, {"master", Str(o.master)},
      {"master_port", Str(o.master_port)},
      {"nnodes", Str(o.nnodes)}, {"node_timeout", Str(o.node_timeout)}, {"np", Str(o.np)}, {"nproc_per_node", Str(o.nproc_per_node)},
      {"rank", Str(o.node_rank)}, {"rendezvous_timeout", Str(o.rendezvous_timeout)}, {"run_mode", RunModeName(mode)},
      {"scale", Str(o.scale)}, {"server_num", Str(o.server_num)}, {"servers", Str(o.servers)},
      {"started_port", Str(o.started_port)}, {"training_script", Str(o.command.front())},
      {"training_script_args", Join({o.command.begin() + 1, o.command.end()}, " ")},
      {"use_paddlecloud", Str(o.use_paddlecloud)}, {"worker_num", Str(o.worker_num)},
      {"workers", Str(o.workers)},
  };
}

}  // namespace

std::string ConfigurationBlock(const LaunchOptions& options, RunMode mode) {
  std::string out = "-----------  Configuration Arguments -----------\n";
  for (const auto& [name, value] : OptionValues(options, mode)) {
    out += name + ": " + value + "\n";
  }
  return out + "------------------------------------------------\n";
}

std::string EnvTable(const std::string& title, const EnvList& env) {
  size_t name_width = title.size(), value_width = 5;
  for (const auto& [name, value] : env) {
    name_width = std::max(name_width, name.size());
    value_width = std::max(value_width, value.size());
  }
  auto row = [&](const std::string& a, const std::string& b) {
    return StrCat("| ", a, std::string(name_width - a.size(), ' '), " | ", b,
                  std::string(value_width - b.size(), ' '), " |\n");
  };
  const std::string rule = "+" + std::string(name_width + 2, '-') + "+" +
                           std::string(value_width + 2, '-') + "+\n";
  std::string out = rule + row(title, "Value") + rule;
  for (const auto& [name, value] : env) out += row(name, value);
  return out + rule;
}

std::string EndpointsLog(const ClusterSpec& spec) {
  std::string out = "PADDLE_TRAINER_ENDPOINTS:\n";
  for (const auto& e : spec.TrainerEndpoints()) out += e + "\n";
  if (spec.mode == RunMode::kPs) {
    out += "PADDLE_PSERVERS_IP_PORT_LIST:\n";
    for (const auto& e : spec.ServerEndpoints()) out += e + "\n";
    if (!spec.heter_workers.empty()) {
      out += "PADDLE_HETER_TRAINER_IP_PORT_LIST:\n";
      for (const auto& e : spec.HeterEndpoints()) out += e + "\n";
    }
  }
  return out;
}

namespace {

std::string AbortLine(const char* what, size_t total, const char* key,
                      const std::vector<int>& ids) {
  std::vector<std::string> s;
  for (int id : ids) s.push_back(std::to_string(id));
  return StrCat("ABORT!!! Out of all ", total, " ", what, "s, the ", what, " process with ", key,
                "=[", Join(s, ","), "] was aborted. Please check its log.\n");
}

std::string Cause(const ProcessOutcome& o) {
  std::string out = StrCat("  ", o.spec.label(), " (pid ", o.pid, ", ", o.spec.endpoint(), ") ",
                           o.status.Describe(), "\n  last ", o.tail.size(), " lines of ",
                           o.log_path, ":\n");
  constexpr size_t kMaxLine = 400;  // a runaway line must not bury the report
  for (const auto& line : o.tail) {
    out += "    | " + line.substr(0, kMaxLine);
    if (line.size() > kMaxLine) out += StrCat("... (", line.size() - kMaxLine, " more bytes)");
    out += "\n";
  }
  return out;
}

}  // namespace

std::string AbortReport(const ClusterSpec& spec, const RunResult& result) {
  std::vector<int> trainers, servers, heters;
  for (const auto& o : result.failed) {
    (o.spec.role == Role::kServer ? servers : o.spec.role == Role::kHeterWorker ? heters : trainers)
        .push_back(o.spec.id);
  }
  for (auto* ids : {&trainers, &servers, &heters}) std::sort(ids->begin(), ids->end());
  std::string out;
  if (!result.stall.empty()) {
    out += StrCat("ABORT!!! The job stalled and was stopped: ", result.stall, "\n");
  }
  if (!trainers.empty()) out += AbortLine("trainer", spec.trainers.size(), "rank", trainers);
  if (!servers.empty()) out += AbortLine("server", spec.servers.size(), "id", servers);
  if (!heters.empty()) out += AbortLine("heter worker", spec.heter_workers.size(), "id", heters);
  for (const auto& o : result.failed) out += Cause(o);
  if (!out.empty() && !result.diagnosis.empty()) {
    out += "Diagnosis (flotilla doctor):\n";
    for (const auto& line : Split(result.diagnosis, '\n')) out += "  " + line + "\n";
  }
  return out;
}

}  // namespace flotilla::launch
