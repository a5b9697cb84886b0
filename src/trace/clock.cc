#include "flotilla/trace/clock.h"

#include <atomic>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace flotilla::trace {

namespace {
int64_t Read(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::mutex offset_mu;
ClockOffset offset;  // guarded by offset_mu
}  // namespace

int64_t MonoNs() { return Read(CLOCK_MONOTONIC); }
int64_t WallNs() { return Read(CLOCK_REALTIME); }

ClockOffset GetClockOffset() {
  std::lock_guard<std::mutex> lock(offset_mu);
  return offset;
}

void SetClockOffset(ClockOffset o) {
  std::lock_guard<std::mutex> lock(offset_mu);
  offset = o;
}

std::string_view FormatTimeOfDay(int64_t wall_ns, char (&buf)[16]) {
  time_t secs = static_cast<time_t>(wall_ns / 1000000000);
  tm local;
  localtime_r(&secs, &local);
  int n = std::snprintf(buf, sizeof(buf), "%02d:%02d:%02d", local.tm_hour, local.tm_min,
                        local.tm_sec);
  return {buf, static_cast<size_t>(n)};
}

}  // namespace flotilla::trace
