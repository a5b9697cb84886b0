#include "trace/runtime.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>

#include "flotilla/common/file_util.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/enforce.h"
#include "flotilla/trace/activity.h"
#include "flotilla/trace/dump.h"
#include "flotilla/trace/flight_recorder.h"
#include "flotilla/trace/http_server.h"
#include "flotilla/trace/process_info.h"
#include "flotilla/trace/trace.h"
#include "trace/metrics_snapshot.h"
#include "trace/settings.h"
#include "trace/thread_buffer.h"

namespace flotilla::trace {

namespace {

// Timeline state read by OnStep on the executor's thread.
std::atomic<bool> g_timeline_on{false};
std::atomic<int64_t> g_first_step{-1}, g_last_step{-1};
int g_signal_pipe[2] = {-1, -1};

bool InWindow(int64_t step) {
  const int64_t first = g_first_step.load(std::memory_order_relaxed);
  if (first < 0) return true;
  return step >= first && step <= g_last_step.load(std::memory_order_relaxed);
}

constexpr auto kPeriod = std::chrono::milliseconds(100);

}  // namespace

Runtime& Runtime::Get() {
  static Runtime* runtime = [] {
    auto* r = new Runtime();  // never destroyed: AtExit stops it
    std::atexit([] { Get().AtExit(); });
    return r;
  }();
  return *runtime;
}

Runtime::Runtime() {
  const Settings& s = Settings::Get();
  BufferRegistry::Get().set_capacity(s.buffer_events);
  if (!s.flight_dir.empty() && pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) == 0) {
    struct sigaction sa = {};
    sa.sa_handler = &Runtime::OnSignal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, nullptr);
    AnnounceListening(s.flight_dir);
  }
  if (!s.timeline.empty()) {
    StartTimeline({s.timeline, s.timeline_max_bytes, s.first_step, s.last_step});
  }
  ServeMetrics();  // when FLOTILLA_METRICS_PORT asks for it
  thread_ = std::thread([this] { Loop(); });
}

// <flight dir>/<label>.pid tells the launcher that SIGUSR1 now dumps the
// flight recorder instead of killing this process.
void Runtime::AnnounceListening(const std::string& dir) {
  try {
    MakeDirs(dir);
    WriteFileAtomic(dir + "/" + Self().file_stem() + ".pid", std::to_string(getpid()) + "\n");
  } catch (const std::exception& e) {
    log::Warn("flight recorder: {}", e.what());
  }
}

void Runtime::OnSignal(int) {
  const char c = 'd';
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &c, 1);
}

void Runtime::OnStep(int64_t step) {
  if (!g_timeline_on.load(std::memory_order_relaxed)) return;
  detail::g_enabled.store(InWindow(step), std::memory_order_relaxed);
}

void Runtime::StartTimeline(TimelineOptions options) {
  std::lock_guard<std::mutex> lock(mu_);
  if (writer_) writer_->Close();
  g_first_step = options.first_step;
  g_last_step = options.last_step;
  writer_ = std::make_unique<TimelineWriter>(std::move(options), Self());
  g_timeline_on = true;
  detail::g_enabled = InWindow(Step());
}

void Runtime::StopTimeline() {
  std::lock_guard<std::mutex> lock(mu_);
  g_timeline_on = false;
  detail::g_enabled = false;
  if (writer_) writer_->Close();
  writer_.reset();
}

void Runtime::FlushTimeline() {
  std::lock_guard<std::mutex> lock(mu_);
  if (writer_) writer_->Flush();
}

void Runtime::RequestDump(std::string reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_dump_.empty()) pending_dump_ = std::move(reason);
  }
  cv_.notify_all();
}

void Runtime::Loop() {
  SetThreadName("trace");
  while (true) {
    pollfd fd{g_signal_pipe[0], POLLIN, 0};
    if (g_signal_pipe[0] >= 0) {
      poll(&fd, 1, static_cast<int>(kPeriod.count()));
    } else {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, kPeriod, [&] { return stop_ || !pending_dump_.empty(); });
    }
    if (fd.revents & POLLIN) {
      char buf[64];
      while (read(g_signal_pipe[0], buf, sizeof(buf)) > 0) {
      }
      DumpFlight("signal");
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    Tick();
  }
}

void Runtime::Tick() {
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (writer_) {
      try {
        writer_->Flush();
      } catch (const std::exception& e) {
        log::Warn("timeline: {}; stopped writing it", e.what());
        writer_.reset();
      }
    }
    reason.swap(pending_dump_);
  }
  BufferRegistry::Get().PruneDrained();
  if (!reason.empty()) DumpFlight(reason);
  Watchdog();
  const int64_t now = MonoNs();
  if (now - last_snapshot_ns_ >= 1000000000) {
    last_snapshot_ns_ = now;
    WriteMetricsSnapshot();
  }
}

std::string StalledRecord(FlightRecord* record) {
  FlightRecord r;
  if (!FlightRecorder::Get().OldestPending(&r)) return "";
  const int64_t since = r.start_ns != 0 ? r.start_ns : r.enqueue_ns;
  const int64_t pending = MonoNs() - since;
  if (pending < Settings::Get().stall_timeout.count() * 1000000) return "";
  if (record) *record = r;
  std::string what = NameOf(r.kind);
  if (r.type == FlightType::kCollective) {
    what += StrCat(" #", r.seq, " (", NameOf(r.group), " comm ", r.comm, ")");
  } else {
    what += StrCat(" to server ", r.comm, " (", NameOf(r.where), ")");
  }
  return StrCat(what, " pending for ", pending / 1000000, " ms");
}

// A record pending longer than the stall timeout is reported once.
void Runtime::Watchdog() {
  FlightRecord r;
  const std::string what = StalledRecord(&r);
  if (what.empty() || r.id == stalled_record_) return;
  stalled_record_ = r.id;
  Stall(what);
}

void Runtime::Stall(const std::string& what) {
  log::Warn("stall: {}; flight records dumped", what);
  const std::string dir = Settings::Get().flight_dir;
  DumpFlight("stall: " + what);
  if (dir.empty()) return;
  try {
    WriteFileAtomic(StallMarkerPath(dir, Self().label), Self().label + ": " + what + "\n");
  } catch (const std::exception& e) {
    log::Warn("cannot write the stall marker: {}", e.what());
  }
}

void Runtime::AtExit() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::string reason;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (writer_) writer_->Close();
    writer_.reset();
    reason.swap(pending_dump_);
  }
  if (!Settings::Get().flight_dir.empty()) DumpFlight(reason.empty() ? "exit" : reason);
  WriteMetricsSnapshot();
}

}  // namespace flotilla::trace
