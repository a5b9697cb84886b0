#include "flotilla/common/logging.h"

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

}  // namespace flotilla::log
