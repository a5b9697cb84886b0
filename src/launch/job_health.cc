#include "launch/job_health.h"

#include <filesystem>

#include "flotilla/common/enforce.h"
#include "flotilla/common/error.h"
#include "flotilla/common/file_util.h"

namespace flotilla::launch {

namespace fs = std::filesystem;

std::string FirstStallMarker(const std::string& flight_dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(flight_dir, ec)) {
    if (e.path().extension() != ".stalled") continue;
    try {
      std::string what = ReadFile(e.path().string());
      while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
      return what;
    } catch (const Error&) {
      continue;  // removed while read: a new run cleared the directory
    }
  }
  return "";
}

JobHealth::JobHealth(std::string flight_dir) : flight_dir_(std::move(flight_dir)) {}

void JobHealth::Joining(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  not_ready_ = why;
  running_ = 0;
}

void JobHealth::Status(const std::vector<ProcessView>& views) {
  std::string first_down;
  size_t running = 0;
  for (const ProcessView& v : views) {
    if (v.running) {
      ++running;
    } else if (first_down.empty()) {
      first_down = StrCat(v.spec.label(), " ", v.state, ": ", v.status);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  not_ready_ = views.empty() ? "no processes on this node" : first_down;
  running_ = running;
}

std::pair<bool, std::string> JobHealth::Live() const {
  const std::string stalled = FirstStallMarker(flight_dir_);
  if (!stalled.empty()) return {false, "stalled: " + stalled};
  return {true, "ok"};
}

std::pair<bool, std::string> JobHealth::Ready() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!not_ready_.empty()) return {false, "not ready: " + not_ready_};
  return {true, StrCat("ready: ", running_, running_ == 1 ? " process" : " processes", " running")};
}

}  // namespace flotilla::launch
