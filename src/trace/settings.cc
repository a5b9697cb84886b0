#include "trace/settings.h"

#include "flotilla/common/enforce.h"
#include "flotilla/common/env.h"
#include "flotilla/common/strings.h"
#include "flotilla/trace/trace.h"

namespace flotilla::trace {

namespace {

Settings Load() {
  Settings s;
  s.timeline = env::GetOr("FLOTILLA_TIMELINE", "");
  const int64_t max_mb = env::GetIntInRange("FLOTILLA_TIMELINE_MAX_MB", 0, 0, 1 << 20, "0: none");
  s.timeline_max_bytes = max_mb << 20;
  if (auto steps = env::Get("FLOTILLA_TIMELINE_STEPS"); steps && !steps->empty()) {
    ParseStepWindow("FLOTILLA_TIMELINE_STEPS", *steps, &s.first_step, &s.last_step);
  }
  const int64_t records = env::GetIntInRange("FLOTILLA_FLIGHT_RECORDER_SIZE", 2000, 0, 1 << 24);
  s.flight_records = static_cast<size_t>(records);
  s.flight_dir = env::GetOr("FLOTILLA_FLIGHT_DIR", "");
  if (auto stall = env::Get("FLOTILLA_STALL_TIMEOUT"); stall && !stall->empty()) {
    const double secs = ParseDouble(*stall, "FLOTILLA_STALL_TIMEOUT");
    FLOTILLA_ENFORCE(secs > 0, "FLOTILLA_STALL_TIMEOUT must be a positive number of seconds, got ",
                     *stall);
    s.stall_timeout = std::chrono::milliseconds(static_cast<int64_t>(secs * 1000));
  }
  s.metrics_dir = env::GetOr("FLOTILLA_METRICS_DIR", "");
  const int64_t events = env::GetIntInRange("FLOTILLA_TRACE_BUFFER_EVENTS", 4096, 16, 1 << 24);
  s.buffer_events = static_cast<size_t>(events);
  return s;
}

}  // namespace

const Settings& Settings::Get() {
  static const Settings settings = Load();
  return settings;
}

void ParseStepWindow(const std::string& what, const std::string& text, int64_t* first,
                     int64_t* last) {
  const size_t dash = text.find('-');
  const std::string a = text.substr(0, dash);
  const std::string b = dash == std::string::npos ? a : text.substr(dash + 1);
  const std::string expected = what + " '" + text + "' (expected FIRST-LAST, e.g. 100-120)";
  *first = ParseInt(a, expected);
  *last = ParseInt(b, expected);
  FLOTILLA_ENFORCE(*first >= 0 && *last >= *first, what, " '", text,
                   "' must be FIRST-LAST with 0 <= FIRST <= LAST");
}

}  // namespace flotilla::trace
