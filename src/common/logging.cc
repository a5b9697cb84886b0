#include "flotilla/common/logging.h"

#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace flotilla::log {

void SetRank(int rank) {
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] [rank " + std::to_string(rank) + "] %v");
}

void InitFromEnv() {
  const char* level = std::getenv("FLOTILLA_LOG_LEVEL");
  if (level != nullptr) spdlog::set_level(spdlog::level::from_str(level));
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
}

Capture::Capture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)) {
  spdlog::default_logger()->sinks().push_back(sink_);
}

Capture::~Capture() {
  auto& sinks = spdlog::default_logger()->sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
}

std::string Capture::text() const {
  spdlog::default_logger()->flush();
  return text_.str();
}

}  // namespace flotilla::log
