#include "flotilla/comm/trace_clock.h"

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"

namespace flotilla::comm {

namespace {

constexpr int kMaxSamples = 32;
constexpr auto kPoll = std::chrono::milliseconds(100);

std::string Key(int64_t id, const char* what, int i) {
  return StrCat("flotilla/trace_clock/", id, "/", what, "/", i);
}
const char kNextKey[] = "flotilla/trace_clock/next";

bool WaitFor(Store& store, const std::string& key, std::chrono::milliseconds timeout) {
  try {
    store.wait({key}, timeout);
    return true;
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kDeadlineExceeded) return false;
    throw;
  }
}

}  // namespace

ClockResponder::ClockResponder(std::shared_ptr<Store> store) : store_(std::move(store)) {
  thread_ = std::thread([this] { Loop(); });
}

ClockResponder::~ClockResponder() {
  stop_ = true;
  thread_.join();
}

// Requests are numbered; they are answered in order. A requester that took
// a number and vanished is skipped once a later one has waited a second.
void ClockResponder::Loop() {
  int64_t id = 1;
  std::chrono::steady_clock::time_point later_waiting{};
  while (!stop_) {
    try {
      if (store_->check({Key(id, "req", 0)})) {
        Serve(id++);
        later_waiting = {};
      } else if (store_->check({Key(id + 1, "req", 0)})) {
        const auto now = std::chrono::steady_clock::now();
        if (later_waiting == std::chrono::steady_clock::time_point{}) later_waiting = now;
        if (now - later_waiting > std::chrono::seconds(1)) {
          ++id;
          later_waiting = {};
        } else {
          WaitFor(*store_, Key(id, "req", 0), std::chrono::milliseconds(10));
        }
      } else {
        WaitFor(*store_, Key(id, "req", 0), kPoll);
      }
    } catch (const std::exception&) {
      std::this_thread::sleep_for(kPoll);  // the store is gone: the job is ending
    }
  }
}

// A requester posts how many samples it takes before its first request.
bool ClockResponder::Serve(int64_t id) {
  const int64_t samples = ParseInt(store_->getString(Key(id, "samples", 0)), "clock samples");
  for (int i = 0; i < std::min<int64_t>(samples, kMaxSamples) && !stop_; ++i) {
    if (!WaitFor(*store_, Key(id, "req", i), std::chrono::seconds(1))) return false;
    store_->setString(Key(id, "resp", i), std::to_string(trace::MonoNs()));
  }
  return true;
}

trace::ClockOffset AlignTraceClock(Store& store, int samples, std::chrono::milliseconds timeout) {
  FLOTILLA_ENFORCE(samples >= 1 && samples <= kMaxSamples, "clock samples must be in [1, ",
                   kMaxSamples, "], got ", samples);
  const int64_t id = store.add(kNextKey, 1);
  store.setString(Key(id, "samples", 0), std::to_string(samples));
  trace::ClockOffset best{0, INT64_MAX};
  for (int i = 0; i < samples; ++i) {
    const int64_t t0 = trace::MonoNs();
    store.setString(Key(id, "req", i), "");
    FLOTILLA_CHECK(WaitFor(store, Key(id, "resp", i), timeout), DeadlineExceeded,
                   "no clock responder answered within ", timeout.count(),
                   " ms (is the job started by flotilla launch with --timeline?)");
    const int64_t reference = ParseInt(store.getString(Key(id, "resp", i)), "clock response");
    const int64_t t3 = trace::MonoNs();
    const int64_t error = (t3 - t0 + 1) / 2;
    if (error < best.error_ns) best = {reference - (t0 + t3) / 2, error};
  }
  trace::SetClockOffset(best);
  return best;
}

}  // namespace flotilla::comm
