// Runtime: the process's trace thread and what it owns — the timeline
// writer, the stall watchdog, flight-recorder dumps (requested, on SIGUSR1,
// at exit) and the metrics snapshots for the dashboard. Started by the
// first InitProcess() (every layer that records calls it), configured from
// Settings. Private to trace.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "trace/timeline_writer.h"

namespace flotilla::trace {

struct FlightRecord;

// The oldest collective or parameter-server call pending longer than the
// stall timeout ("allreduce #17 (hang comm 0) pending for 3095 ms"), or ""
// when none is; fills `record` when given. Thread-safe.
std::string StalledRecord(FlightRecord* record = nullptr);

class Runtime {
 public:
  // Starts the runtime once; thread-safe.
  static Runtime& Get();
  // Opens or closes a --timeline_steps window as the step advances.
  static void OnStep(int64_t step);

  void StartTimeline(TimelineOptions options);
  void StopTimeline();
  void FlushTimeline();
  void RequestDump(std::string reason);
  // Called by the stall watchdog and ReportStall: dump and marker, once per
  // pending record / report.
  void Stall(const std::string& what);

 private:
  Runtime();
  void Loop();
  void Tick();
  void Watchdog();
  void AtExit();
  static void OnSignal(int);
  static void AnnounceListening(const std::string& dir);

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                       // guarded by mu_
  std::string pending_dump_;                // guarded by mu_
  std::unique_ptr<TimelineWriter> writer_;  // guarded by mu_
  uint64_t stalled_record_ = 0;             // trace thread only
  int64_t last_snapshot_ns_ = 0;            // trace thread only
  std::thread thread_;
};

}  // namespace flotilla::trace
