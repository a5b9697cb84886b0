#include "flotilla/trace/dump.h"

#include <mutex>
#include <nlohmann/json.hpp>

#include "flotilla/common/file_util.h"
#include "flotilla/common/logging.h"
#include "flotilla/trace/activity.h"
#include "flotilla/trace/flight_recorder.h"
#include "flotilla/trace/process_info.h"
#include "trace/runtime.h"
#include "trace/settings.h"

namespace flotilla::trace {

namespace {

nlohmann::json RecordJson(const FlightRecord& r) {
  nlohmann::json j = {{"id", r.id},
                      {"type", FlightTypeName(r.type)},
                      {"state", FlightStateName(r.state)},
                      {"kind", NameOf(r.kind)},
                      {"seq", r.seq},
                      {"bytes", r.bytes},
                      {"step", r.step},
                      {"op", NameOf(r.op)},
                      {"enqueue_ns", r.enqueue_ns},
                      {"start_ns", r.start_ns},
                      {"end_ns", r.end_ns}};
  if (r.type == FlightType::kCollective) {
    j.update({{"group", NameOf(r.group)}, {"backend", NameOf(r.where)}, {"comm", r.comm},
              {"rank", r.rank}, {"participants", r.participants}, {"bucket", r.bucket}});
  } else {
    j.update({{"table", NameOf(r.group)}, {"endpoint", NameOf(r.where)}, {"server", r.comm},
              {"trainer", r.rank}, {"keys", r.keys}});
  }
  return j;
}

nlohmann::json DumpJson(std::string_view reason) {
  const ProcessInfo& self = Self();
  const Activity a = CurrentActivity();
  const ClockOffset clock = GetClockOffset();
  const int64_t mono = MonoNs();
  nlohmann::json records = nlohmann::json::array();
  for (const FlightRecord& r : FlightRecorder::Get().Snapshot()) records.push_back(RecordJson(r));
  return {{"label", self.label},
          {"role", self.role},
          {"id", self.id},
          {"pid", self.pid},
          {"host", self.host},
          {"reason", std::string(reason)},
          {"mono_ns", mono},
          {"wall_minus_mono_ns", WallNs() - mono},
          {"clock_offset_ns", clock.offset_ns},
          {"clock_error_ns", clock.error_ns},
          {"step", a.step},
          {"in_op", a.in_op},
          {"op", NameOf(a.op)},
          {"op_output", NameOf(a.output)},
          {"op_since_ns", a.since_ns},
          {"records", std::move(records)}};
}

std::mutex dump_mu;  // one dump at a time per process

}  // namespace

std::string FlightDumpPath(const std::string& dir, const std::string& label) {
  return dir + "/" + ProcessInfo{label}.file_stem() + ".flight.json";
}

std::string StallMarkerPath(const std::string& dir, const std::string& label) {
  return dir + "/" + ProcessInfo{label}.file_stem() + ".stalled";
}

void RequestDump(std::string_view reason) { Runtime::Get().RequestDump(std::string(reason)); }

std::string DumpFlight(std::string_view reason) {
  const std::string& dir = Settings::Get().flight_dir;
  if (dir.empty()) return "";
  std::lock_guard<std::mutex> lock(dump_mu);
  const std::string path = FlightDumpPath(dir, Self().label);
  try {
    MakeDirs(dir);
    WriteFileAtomic(path, DumpJson(reason).dump(1) + "\n");
  } catch (const std::exception& e) {
    log::Warn("cannot dump the flight recorder to {}: {}", path, e.what());
    return "";
  }
  return path;
}

void ReportStall(std::string_view what) { Runtime::Get().Stall(std::string(what)); }

}  // namespace flotilla::trace
