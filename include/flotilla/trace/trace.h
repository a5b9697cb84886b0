// Tracing: spans, instants and counters recorded into per-thread buffers
// and written as a Chrome trace-event timeline (see timeline_writer.h).
//
//   trace::Span span(trace::Category::kOp, op_type_id);
//   span.Arg("output", output_id_as_name);   // ... work ...   // recorded at scope exit
//
// Recording takes no lock: each thread appends to its own ring, drained by
// the trace thread. When tracing is off (the default) a span costs one
// relaxed load and a branch; when on, two clock reads and a 144-byte copy
// (bench_trace measures both). A full ring drops events (counted) rather
// than block the caller.
//
// Tracing turns on when the process is started with FLOTILLA_TIMELINE=path
// (flotilla launch --timeline sets it per process), or by StartTimeline().
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "flotilla/trace/clock.h"
#include "flotilla/trace/event.h"
#include "flotilla/trace/names.h"

namespace flotilla::trace {

namespace detail {
inline std::atomic<bool> g_enabled{false};
// Appends `e` to the calling thread's buffer (registering it on first use).
void Append(const Event& e);
}  // namespace detail

// Whether events are being recorded now (the timeline is on and, with a
// step window, the current step is inside it). Thread-safe, wait-free.
// A build configured with -DFLOTILLA_TRACING=OFF compiles every span away
// (the baseline bench_trace_overhead compares against).
#ifdef FLOTILLA_NO_TRACING
constexpr bool Enabled() { return false; }
#else
inline bool Enabled() { return detail::g_enabled.load(std::memory_order_relaxed); }
#endif

// A timed span: starts at construction, recorded when it ends (End() or the
// destructor). Arguments beyond Event::kMaxArgs are ignored. Not copyable;
// use on one thread.
class Span {
 public:
  Span(Category cat, NameId name) : active_(Enabled()) {
    if (active_) Begin(cat, name);
  }
  ~Span() {
    if (active_) End();
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

  Span& Arg(const char* key, int64_t value) {
    if (active_) Add(key, value, 0);
    return *this;
  }
  Span& ArgName(const char* key, NameId value) {
    if (active_) Add(key, value, 1);
    return *this;
  }
  Span& ArgDouble(const char* key, double value);
  // Moves the span's start back to `mono_ns` (a span of work that began
  // before the recording site saw it, such as time in a queue).
  Span& StartedAt(int64_t mono_ns) {
    if (active_) event_.start_ns = mono_ns;
    return *this;
  }
  // Draws the span on a virtual row instead of the thread's (track.h).
  Span& OnTrack(uint32_t track) {
    if (active_) event_.track = track;
    return *this;
  }
  // Records the span now; later calls and the destructor do nothing.
  void End();
  bool active() const { return active_; }

 private:
  void Begin(Category cat, NameId name);
  void Add(const char* key, int64_t value, int kind);

  bool active_;
  Event event_;  // meaningful only when active_
};

// A point event on the calling thread's row, with up to two integer args.
void Instant(Category cat, NameId name, const char* key = nullptr, int64_t value = 0,
             const char* key2 = nullptr, int64_t value2 = 0);
// A counter sample ("step", "samples_per_sec", "loss" ...): a counter track
// of the process.
void Count(NameId name, double value);

// Starts this process's trace runtime (timeline from FLOTILLA_TIMELINE,
// stall watchdog, dumps, metrics snapshots; see settings in
// docs/observability.md). Idempotent and cheap after the first call; every
// layer that records calls it. Throws InvalidArgument for a malformed
// FLOTILLA_* setting.
void InitProcess();
// Starts writing a timeline to `path` (replacing one already open), and
// stops (closing the file). max_bytes > 0 bounds the file (ring mode);
// first_step >= 0 records only steps first_step..last_step (see SetStep).
void StartTimeline(const std::string& path, int64_t max_bytes = 0, int64_t first_step = -1,
                   int64_t last_step = -1);
// Parses a step window "A-B" (or "A": one step), as FLOTILLA_TIMELINE_STEPS
// and `flotilla launch --timeline_steps` write it, into first/last. Throws
// InvalidArgument naming `what` (the flag or variable it came from).
void ParseStepWindow(const std::string& what, const std::string& text, int64_t* first,
                     int64_t* last);
void StopTimeline();
// Writes what is buffered to the timeline file now (the trace thread does
// it every 100 ms).
void FlushTimeline();

// Names the calling thread's row ("executor", "comm 0", "rpc").
void SetThreadName(std::string_view name);
// The calling thread's row number in this process's timeline.
uint32_t CurrentThreadRow();

}  // namespace flotilla::trace
