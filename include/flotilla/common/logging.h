// Process-wide logging on spdlog. Messages go to stderr with time, level and
// (when set) the rank, so interleaved logs of several processes stay readable.
// Thread-safe.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>

namespace flotilla::log {

// Tags every later line with "[rank N]". Call once the rank is known.
void SetRank(int rank);
// Reads FLOTILLA_LOG_LEVEL (trace|debug|info|warn|error|off); default info.
void InitFromEnv();

namespace detail {
// Makes spdlog's registry and the default logger's sinks while the program
// is initialised, before main, so two threads' first log calls never race to
// make them.
struct LoggingInit {
  LoggingInit();
};
inline const LoggingInit logging_init;
}  // namespace detail

template <typename... Args>
void Info(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  spdlog::info(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void Warn(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  spdlog::warn(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void Error(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  spdlog::error(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void Debug(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  spdlog::debug(fmt, std::forward<Args>(args)...);
}

class CaptureSink;

// Copies every line logged through the default logger while it lives (for
// tests that check what a process logs). May be made, read and destroyed
// while other threads log. Not copyable.
class Capture {
 public:
  Capture();
  ~Capture();
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  // The lines so far.
  std::string text() const;

 private:
  std::shared_ptr<CaptureSink> sink_;
};

// Writes out anything buffered (before a process ends without unwinding).
inline void Flush() { spdlog::default_logger()->flush(); }

}  // namespace flotilla::log
