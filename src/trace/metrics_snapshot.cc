#include "trace/metrics_snapshot.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string_view>
#include <nlohmann/json.hpp>

#include "flotilla/common/file_util.h"
#include "flotilla/common/enforce.h"
#include "flotilla/trace/activity.h"
#include "flotilla/trace/flight_recorder.h"
#include "flotilla/trace/metrics.h"
#include "flotilla/trace/process_info.h"
#include "trace/settings.h"

namespace flotilla::trace {

namespace {

std::string LabelValue(const Labels& labels, const std::string& key) {
  for (const auto& [k, v] : labels) {
    if (k == key) return v;
  }
  return "";
}

// Adds `value` at json[key][index] of a [count, sum, ...] triple.
void AddTo(nlohmann::json& j, const std::string& key, size_t index, double value) {
  if (!j.contains(key)) j[key] = {0.0, 0.0, 0.0};
  j[key][index] = j[key][index].get<double>() + value;
}

std::string Pending() {
  FlightRecord r;
  if (!FlightRecorder::Get().OldestPending(&r)) return "";
  const int64_t since = r.start_ns ? r.start_ns : r.enqueue_ns;
  const double secs = static_cast<double>(MonoNs() - since) / 1e9;
  if (secs < 1.0) return "";  // only waits a person would notice
  if (r.type == FlightType::kCollective) {
    return StrCat(NameOf(r.kind), " #", r.seq, " for ", static_cast<int64_t>(secs), " s");
  }
  return StrCat(NameOf(r.kind), " to server ", r.comm, " for ", static_cast<int64_t>(secs), " s");
}

// Plain figures: metric -> key of the line. Constant tables (nothing to
// destroy): the trace thread writes a last snapshot while the process exits.
struct PlainKey {
  std::string_view metric;
  const char* key;
};
constexpr PlainKey kPlainKeys[] = {
    {"flotilla_steps_total", "steps"},          {"flotilla_samples_total", "samples"},
    {"flotilla_loss", "loss"},                  {"flotilla_step_compute_seconds", "compute_s"},
    {"flotilla_step_comm_seconds", "comm_s"},   {"process_resident_memory_bytes", "rss"},
    {"flotilla_step_seconds_count", "step_count"}, {"flotilla_step_seconds_sum", "step_sum"}};

// Figures by label: metric -> group of the line, label, index in its triple.
struct GroupedKey {
  std::string_view metric;
  const char* group;
  const char* label;
  size_t index;
};
constexpr GroupedKey kGroupedKeys[] = {
    {"flotilla_collective_seconds_count", "coll", "kind", 0},
    {"flotilla_collective_seconds_sum", "coll", "kind", 1},
    {"flotilla_collective_bytes_total", "coll", "kind", 2},
    {"flotilla_rpc_seconds_count", "rpc", "method", 0},
    {"flotilla_rpc_seconds_sum", "rpc", "method", 1},
    {"flotilla_rpc_served_seconds_count", "served", "method", 0},
    {"flotilla_rpc_served_seconds_sum", "served", "method", 1}};

template <typename Entry, size_t N>
const Entry* Find(const Entry (&table)[N], const std::string& metric) {
  for (const Entry& e : table) {
    if (e.metric == metric) return &e;
  }
  return nullptr;
}

}  // namespace

std::string MetricsSnapshotLine() {
  nlohmann::json j = {{"t", WallNs() / 1000000}, {"label", Self().label}, {"step", Step()},
                      {"coll", nlohmann::json::object()}, {"rpc", nlohmann::json::object()},
                      {"served", nlohmann::json::object()}};
  MetricsRegistry::Global().ForEach(
      [&](const std::string& name, const Labels& labels, const char*, double v) {
        if (const PlainKey* p = Find(kPlainKeys, name)) {
          j[p->key] = v;
        } else if (const GroupedKey* g = Find(kGroupedKeys, name)) {
          AddTo(j[g->group], LabelValue(labels, g->label), g->index, v);
        }
      });
  const std::string pending = Pending();
  j["pending"] = pending.empty() ? nlohmann::json(nullptr) : nlohmann::json(pending);
  const Activity a = CurrentActivity();
  j["op"] = a.in_op ? NameOf(a.op) : "";
  return j.dump();
}

void WriteMetricsSnapshot() {
  const std::string& dir = Settings::Get().metrics_dir;
  if (dir.empty()) return;
  static bool made = false;
  if (!made) {
    try {
      MakeDirs(dir);
    } catch (const std::exception&) {
      return;  // the next second tries again
    }
    made = true;
  }
  const std::string path = dir + "/" + Self().file_stem() + ".jsonl";
  // O_NOFOLLOW: never appended through a link planted at the file's name.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string line = MetricsSnapshotLine() + "\n";
  [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());  // a full disk drops the line
  ::close(fd);
}

}  // namespace flotilla::trace
