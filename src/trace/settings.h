// The trace layer's settings, read once from the environment (flotilla
// launch sets them for every process it starts; docs/observability.md).
// Private to trace.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace flotilla::trace {

struct Settings {
  // FLOTILLA_TIMELINE: this process's timeline file ("" = off).
  std::string timeline;
  // FLOTILLA_TIMELINE_MAX_MB: size bound (0 = none); the oldest half is dropped.
  int64_t timeline_max_bytes = 0;
  // FLOTILLA_TIMELINE_STEPS "100-120": record only these steps (-1 = all).
  int64_t first_step = -1, last_step = -1;
  // FLOTILLA_FLIGHT_RECORDER_SIZE: records kept (0 = off).
  size_t flight_records = 2000;
  // FLOTILLA_FLIGHT_DIR: where dumps go ("" = nowhere).
  std::string flight_dir;
  // FLOTILLA_STALL_TIMEOUT (seconds): a collective or call pending this long
  // is a stall: the records are dumped (and the launcher may stop the job).
  std::chrono::milliseconds stall_timeout{60000};
  // FLOTILLA_METRICS_DIR: where this process appends a metrics snapshot
  // every second for the dashboard ("" = off).
  std::string metrics_dir;
  // FLOTILLA_TRACE_BUFFER_EVENTS: events per thread ring.
  size_t buffer_events = 4096;

  static const Settings& Get();
};

}  // namespace flotilla::trace
