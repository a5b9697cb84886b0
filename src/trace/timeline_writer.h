// TimelineWriter: drains every thread's buffer into this process's timeline
// file, a Chrome trace-event JSON array (Perfetto, chrome://tracing).
//
// The file is written incrementally, one event per line, each line but the
// first starting with a comma, so a process killed at any moment leaves a
// file that the viewers load (they accept a missing closing bracket). With
// max_bytes the output rotates between two segment files of max_bytes / 2
// ("<path>.seg<k>"), dropping the oldest, and Close() stitches the last two
// into <path>: the file keeps the newest events that fit.
//
// Timestamps are this process's monotonic clock in microseconds; a
// "flotilla_process" metadata event carries the label and the clock's
// offset to the job's reference (re-emitted when it changes), which
// MergeTimelines applies. Used by the trace thread only: not thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>

#include "flotilla/trace/clock.h"
#include "flotilla/trace/event.h"
#include "flotilla/trace/process_info.h"

namespace flotilla::trace {

struct TimelineOptions {
  std::string path;
  int64_t max_bytes = 0;  // 0: unbounded
  // Record only steps first_step..last_step (-1: every step). Used by the
  // runtime, not the writer.
  int64_t first_step = -1;
  int64_t last_step = -1;
};

class TimelineWriter {
 public:
  // Creates the directory and the file; throws Unavailable naming the path.
  TimelineWriter(TimelineOptions options, ProcessInfo self);
  ~TimelineWriter();
  TimelineWriter(const TimelineWriter&) = delete;
  TimelineWriter& operator=(const TimelineWriter&) = delete;

  // Writes every event recorded since the last call.
  void Flush();
  // Flushes, closes the array and (with segments) stitches <path>. Idempotent.
  void Close();
  const std::string& path() const { return options_.path; }
  int64_t events_written() const { return events_; }
  int64_t events_dropped() const;

 private:
  std::string SegmentPath(int k) const;
  void OpenFile(const std::string& path);
  void CloseFile();
  void WriteHeader();
  void WriteNames();
  void Emit(std::string& line);
  void MaybeRotate();
  void Stitch();

  TimelineOptions options_;
  ProcessInfo self_;
  std::FILE* file_ = nullptr;
  int segment_ = 0;
  int64_t file_bytes_ = 0;
  bool first_line_ = true;
  bool closed_ = false;
  int64_t events_ = 0;
  ClockOffset clock_written_{0, -2};
  std::map<uint32_t, std::string> names_written_;  // row id -> name in this file
};

// Appends one event as a JSON object (no separator) for process `pid`.
void FormatEvent(std::string& out, const Event& e, int pid, uint32_t tid);

}  // namespace flotilla::trace
