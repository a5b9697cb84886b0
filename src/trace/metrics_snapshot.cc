#include "trace/metrics_snapshot.h"

#include <cstdio>
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

}  // namespace

std::string MetricsSnapshotLine() {
  nlohmann::json j = {{"t", WallNs() / 1000000}, {"label", Self().label}, {"step", Step()}};
  nlohmann::json coll = nlohmann::json::object(), rpc = nlohmann::json::object(),
                 served = nlohmann::json::object();
  MetricsRegistry::Global().ForEach(
      [&](const std::string& name, const Labels& labels, const char*, double v) {
        if (name == "flotilla_steps_total") j["steps"] = v;
        else if (name == "flotilla_samples_total") j["samples"] = v;
        else if (name == "flotilla_loss") j["loss"] = v;
        else if (name == "flotilla_step_compute_seconds") j["compute_s"] = v;
        else if (name == "flotilla_step_comm_seconds") j["comm_s"] = v;
        else if (name == "process_resident_memory_bytes") j["rss"] = v;
        else if (name == "flotilla_step_seconds_count") j["step_count"] = v;
        else if (name == "flotilla_step_seconds_sum") j["step_sum"] = v;
        else if (name == "flotilla_collective_seconds_count") AddTo(coll, LabelValue(labels, "kind"), 0, v);
        else if (name == "flotilla_collective_seconds_sum") AddTo(coll, LabelValue(labels, "kind"), 1, v);
        else if (name == "flotilla_collective_bytes_total") AddTo(coll, LabelValue(labels, "kind"), 2, v);
        else if (name == "flotilla_rpc_seconds_count") AddTo(rpc, LabelValue(labels, "method"), 0, v);
        else if (name == "flotilla_rpc_seconds_sum") AddTo(rpc, LabelValue(labels, "method"), 1, v);
        else if (name == "flotilla_rpc_served_seconds_count") AddTo(served, LabelValue(labels, "method"), 0, v);
        else if (name == "flotilla_rpc_served_seconds_sum") AddTo(served, LabelValue(labels, "method"), 1, v);
      });
  j["coll"] = std::move(coll);
  j["rpc"] = std::move(rpc);
  j["served"] = std::move(served);
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
  if (std::FILE* f = std::fopen(path.c_str(), "a")) {
    const std::string line = MetricsSnapshotLine() + "\n";
    std::fwrite(line.data(), 1, line.size(), f);
    std::fclose(f);
  }
}

}  // namespace flotilla::trace
