#include "flotilla/common/logging.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/dist_sink.h>

#include <cstdlib>
#include <mutex>
#include <string>

namespace flotilla::log {

// Keeps every line it is given; text() may be read while other threads log.
class CaptureSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::string text() {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    text_.append(line.data(), line.size());
  }
  void flush_() override {}

 private:
  std::string text_;
};

namespace {

// The default logger's only sink: it forwards to the logger's own sinks and
// to every live Capture. Its sink list is guarded by its mutex, so a Capture
// can come and go while other threads log; the logger's own sink vector is
// never touched again after this.
std::shared_ptr<spdlog::sinks::dist_sink_mt> MakeTee() {
  auto& sinks = spdlog::default_logger()->sinks();
  auto tee = std::make_shared<spdlog::sinks::dist_sink_mt>(sinks);
  sinks.assign({tee});
  return tee;
}

// Made on first use, which detail::LoggingInit puts before main.
spdlog::sinks::dist_sink_mt& Tee() {
  static const std::shared_ptr<spdlog::sinks::dist_sink_mt> tee = MakeTee();
  return *tee;
}

}  // namespace

namespace detail {
LoggingInit::LoggingInit() { Tee(); }
}  // namespace detail

void SetRank(int rank) {
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] [rank " + std::to_string(rank) + "] %v");
}

void InitFromEnv() {
  const char* level = std::getenv("FLOTILLA_LOG_LEVEL");
  if (level != nullptr) spdlog::set_level(spdlog::level::from_str(level));
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
}

Capture::Capture() : sink_(std::make_shared<CaptureSink>()) { Tee().add_sink(sink_); }

Capture::~Capture() { Tee().remove_sink(sink_); }

std::string Capture::text() const { return sink_->text(); }

}  // namespace flotilla::log
