#include "flotilla/trace/flight_recorder.h"

#include <exception>

#include "flotilla/trace/activity.h"
#include "flotilla/trace/clock.h"
#include "flotilla/trace/dump.h"
#include "trace/settings.h"

namespace flotilla::trace {

const char* FlightTypeName(FlightType t) {
  return t == FlightType::kCollective ? "collective" : "rpc";
}

const char* FlightStateName(FlightState s) {
  switch (s) {
    case FlightState::kQueued: return "queued";
    case FlightState::kStarted: return "started";
    case FlightState::kDone: return "done";
    case FlightState::kFailed: return "failed";
  }
  return "unknown";
}

FlightRecorder& FlightRecorder::Get() {
#ifdef FLOTILLA_NO_TRACING
  static auto* recorder = new FlightRecorder(0);
#else
  static auto* recorder = new FlightRecorder(Settings::Get().flight_records);
#endif
  return *recorder;
}

FlightRecorder::FlightRecorder(size_t capacity) : ring_(capacity) {}

uint64_t FlightRecorder::Add(FlightRecord record) {
  if (ring_.empty()) return 0;
  if (record.enqueue_ns == 0) record.enqueue_ns = MonoNs();
  if (record.step < 0) {
    const Activity a = CurrentActivity();
    record.step = a.step;
    record.op = a.in_op ? a.op : kNoName;
  }
  std::lock_guard<std::mutex> lock(mu_);
  record.id = next_id_++;
  ring_[record.id % ring_.size()] = record;
  return record.id;
}

FlightRecord* FlightRecorder::Find(uint64_t id) {
  if (id == 0 || ring_.empty()) return nullptr;
  FlightRecord& r = ring_[id % ring_.size()];
  return r.id == id ? &r : nullptr;
}

void FlightRecorder::MarkStarted(uint64_t id) {
  if (id == 0) return;
  const int64_t now = MonoNs();
  std::lock_guard<std::mutex> lock(mu_);
  if (FlightRecord* r = Find(id)) {
    r->state = FlightState::kStarted;
    r->start_ns = now;
  }
}

void FlightRecorder::MarkEnded(uint64_t id, bool ok) {
  if (id == 0) return;
  const int64_t now = MonoNs();
  {
    std::lock_guard<std::mutex> lock(mu_);
    FlightRecord* r = Find(id);
    if (!r) return;
    r->state = ok ? FlightState::kDone : FlightState::kFailed;
    if (r->start_ns == 0) r->start_ns = now;
    r->end_ns = now;
  }
  if (!ok) RequestDump("failure");
}

std::vector<FlightRecord> FlightRecorder::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<FlightRecord> out;
  if (ring_.empty()) return out;
  const uint64_t first = next_id_ > ring_.size() ? next_id_ - ring_.size() : 1;
  for (uint64_t id = first; id < next_id_; ++id) out.push_back(ring_[id % ring_.size()]);
  return out;
}

bool FlightRecorder::OldestPending(FlightRecord* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  bool found = false;
  for (const FlightRecord& r : ring_) {
    if (r.id == 0 || r.state == FlightState::kDone || r.state == FlightState::kFailed) continue;
    if (!found || r.id < out->id) *out = r;
    found = true;
  }
  return found;
}

FlightScope::FlightScope(const FlightRecord& record, bool queued)
    : id_(FlightRecorder::Get().Add(record)), uncaught_(std::uncaught_exceptions()) {
  if (!queued) Start();
}

FlightScope::~FlightScope() {
  if (!ended_) End(std::uncaught_exceptions() <= uncaught_);
}

void FlightScope::Start() { FlightRecorder::Get().MarkStarted(id_); }

void FlightScope::End(bool ok) {
  ended_ = true;
  FlightRecorder::Get().MarkEnded(id_, ok);
}

}  // namespace flotilla::trace
