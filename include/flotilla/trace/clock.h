// Clocks of the trace layer. Every timestamp Flotilla records is
// MonoNs(): CLOCK_MONOTONIC in nanoseconds, the same clock for every process
// of one host. Across hosts, each process measures its offset to the job's
// reference clock (node 0's launcher) at start; timelines and the doctor add
// it (see ClockOffset).
#pragma once

#include <cstdint>
#include <string_view>

namespace flotilla::trace {

// CLOCK_MONOTONIC, nanoseconds. Cheap (vDSO), thread-safe.
int64_t MonoNs();
// CLOCK_REALTIME, nanoseconds since the Unix epoch.
int64_t WallNs();

// This process's monotonic clock relative to the job's reference:
// reference = local + offset_ns, known to within ±error_ns. error_ns < 0:
// never measured (a process outside a launched job is its own reference).
struct ClockOffset {
  int64_t offset_ns = 0;
  int64_t error_ns = -1;
};

// Thread-safe.
ClockOffset GetClockOffset();
void SetClockOffset(ClockOffset offset);

// "14:02:11" in local time for a wall-clock instant.
std::string_view FormatTimeOfDay(int64_t wall_ns, char (&buf)[16]);

}  // namespace flotilla::trace
