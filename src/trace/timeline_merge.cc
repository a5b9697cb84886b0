#include "flotilla/trace/timeline_merge.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"
#include "flotilla/trace/process_info.h"

namespace flotilla::trace {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct ProcessFile {
  ProcessInfo info;
  int os_pid = 0;
  int64_t offset_ns = 0;
  int64_t error_ns = -1;
  std::vector<json> events;  // as written, minus process metadata
};

// Every line that parses as an event object; the writer puts one per line.
std::vector<json> ReadEvents(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    size_t b = line.find('{');
    size_t e = line.rfind('}');
    if (b == std::string::npos || e == std::string::npos || e < b) continue;
    json j = json::parse(line.begin() + b, line.begin() + e + 1, nullptr, false);
    if (j.is_object() && j.contains("ph")) out.push_back(std::move(j));
  }
  return out;
}

ProcessFile ReadProcess(const std::string& path) {
  ProcessFile p;
  for (json& e : ReadEvents(path)) {
    const std::string name = e.value("name", "");
    if (e["ph"] == "M" && name == "flotilla_process") {
      const json& a = e["args"];
      p.info = ParseLabel(a.value("label", ""));
      p.os_pid = a.value("os_pid", 0);
      p.offset_ns = a.value("clock_offset_ns", int64_t{0});
      p.error_ns = a.value("clock_error_ns", int64_t{-1});
      continue;
    }
    if (e["ph"] == "M" && (name == "process_name" || name == "process_sort_index")) continue;
    if (p.os_pid == 0) p.os_pid = e.value("pid", 0);
    p.events.push_back(std::move(e));
  }
  if (p.info.label.empty()) p.info = ParseLabel("process " + std::to_string(p.os_pid));
  return p;
}

// Rows in the merged trace: launchers, then ranks, then servers.
int MergedPid(const ProcessInfo& info, int os_pid) {
  if (info.role == "launcher") return 1 + info.id;
  if (info.role == "trainer") return 1000 + info.id;
  if (info.role == "server") return 100000 + info.id;
  return 1000000 + os_pid;
}

struct Span {
  json* event;
  double start, end;
};

// Links each collective's spans across ranks and splits them into waiting
// and transfer. Each arrow end sits at the start of its rank's "transfer"
// slice, with the slice's category: Perfetto binds it to the slice open
// there, Chromium's trace engine to the slice with the same pid, tid, ts and
// category. Returns the number of linked collectives.
int64_t LinkCollectives(std::vector<json>& events, std::vector<json>& extra) {
  std::map<std::tuple<std::string, int64_t, int64_t>, std::vector<Span>> same;
  for (json& e : events) {
    if (e.value("cat", "") != "collective" || e["ph"] != "X" || !e.contains("args")) continue;
    const json& a = e["args"];
    const double start = e["ts"].get<double>();
    same[{a.value("group", ""), a.value("comm", int64_t{0}), a.value("seq", int64_t{0})}]
        .push_back({&e, start, start + e["dur"].get<double>()});
  }
  int64_t flows = 0;
  for (auto& [key, spans] : same) {
    if (spans.size() < 2) continue;
    std::sort(spans.begin(), spans.end(),
              [](const Span& a, const Span& b) { return (*a.event)["pid"] < (*b.event)["pid"]; });
    double last_arrival = 0;
    for (const Span& s : spans) last_arrival = std::max(last_arrival, s.start);
    ++flows;
    for (size_t i = 0; i < spans.size(); ++i) {
      const Span& s = spans[i];
      json& e = *s.event;
      // Each rank's arrow end 1 ns apart: Chromium keys a flow's points by time.
      const double moving_from = std::min(std::max(s.start, last_arrival) + 0.001 * i, s.end);
      e["args"]["waiting_us"] = moving_from - s.start;
      json child = {{"ph", "X"}, {"cat", "collective"}, {"pid", e["pid"]}, {"tid", e["tid"]}};
      if (moving_from > s.start) {
        json wait = child;
        wait.update(
            {{"name", "waiting for ranks"}, {"ts", s.start}, {"dur", moving_from - s.start}});
        extra.push_back(std::move(wait));
      }
      child.update({{"name", "transfer"}, {"ts", moving_from}, {"dur", s.end - moving_from}});
      extra.push_back(std::move(child));
      json flow = {{"ph", i == 0 ? "s" : "f"}, {"cat", "collective"}, {"id", flows},
                   {"name", e["name"].get<std::string>() + " #" + std::to_string(std::get<2>(key))},
                   {"pid", e["pid"]}, {"tid", e["tid"]}, {"ts", moving_from}};
      if (i > 0) flow["bp"] = "e";
      extra.push_back(std::move(flow));
    }
  }
  return flows;
}

json Metadata(const char* name, int pid, json args) {
  return {{"ph", "M"}, {"name", name}, {"pid", pid}, {"tid", 0}, {"args", std::move(args)}};
}

}  // namespace

std::vector<std::string> TimelineFiles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const bool segment = name.find(".json.seg") != std::string::npos;
    if (name.ends_with(".json") || segment) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

MergeStats MergeTimelines(const std::vector<std::string>& inputs, const std::string& output) {
  FLOTILLA_CHECK(!inputs.empty(), NotFound, "no timeline files to merge into ", output);
  std::map<int, ProcessFile> processes;  // by merged pid; segments of one process join
  MergeStats stats;
  for (const auto& path : inputs) {
    ProcessFile p = ReadProcess(path);
    const int pid = MergedPid(p.info, p.os_pid);
    ProcessFile& into = processes[pid];
    if (into.events.empty() && into.info.label.empty()) into = std::move(p);
    else std::move(p.events.begin(), p.events.end(), std::back_inserter(into.events));
  }
  std::vector<json> events;
  json clock = json::object();
  for (auto& [pid, p] : processes) {
    const double shift_us = p.error_ns >= 0 ? static_cast<double>(p.offset_ns) / 1000 : 0;
    events.push_back(Metadata("process_name", pid, {{"name", p.info.label}}));
    events.push_back(Metadata("process_sort_index", pid, {{"sort_index", pid}}));
    for (json& e : p.events) {
      e["pid"] = pid;
      if (e.contains("ts")) e["ts"] = e["ts"].get<double>() + shift_us;
      events.push_back(std::move(e));
    }
    clock[p.info.label] = {
        {"offset_ns", p.offset_ns}, {"error_ns", p.error_ns}, {"os_pid", p.os_pid}};
    stats.max_clock_error_ns = std::max(stats.max_clock_error_ns, p.error_ns);
    ++stats.processes;
  }
  std::vector<json> extra;
  stats.flows = LinkCollectives(events, extra);
  std::move(extra.begin(), extra.end(), std::back_inserter(events));
  stats.events = static_cast<int64_t>(events.size());
  json out = {{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ms"},
              {"otherData", {{"producer", "flotilla"},
                             {"clock_reference", "launcher 0 (CLOCK_MONOTONIC)"},
                             {"clock", std::move(clock)},
                             {"max_clock_error_ns", stats.max_clock_error_ns}}}};
  WriteFileAtomic(output, out.dump() + "\n");
  return stats;
}

}  // namespace flotilla::trace
