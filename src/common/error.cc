#include "flotilla/common/error.h"

#include <string>

#include "flotilla/common/enforce.h"

namespace flotilla {

const char* ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "InvalidArgument";
    case ErrorCode::kNotFound: return "NotFound";
    case ErrorCode::kAlreadyExists: return "AlreadyExists";
    case ErrorCode::kUnavailable: return "Unavailable";
    case ErrorCode::kDeadlineExceeded: return "DeadlineExceeded";
    case ErrorCode::kCorruption: return "Corruption";
    case ErrorCode::kUnimplemented: return "Unimplemented";
    case ErrorCode::kInternal: return "Internal";
    case ErrorCode::kCancelled: return "Cancelled";
  }
  return "Unknown";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(std::string(ErrorCodeName(code)) + ": " + message), code_(code) {}

namespace internal {

std::string WithLocation(const std::string& message, const char* file, int line) {
  std::string_view path(file);
  auto src = path.rfind("src/");
  if (src != std::string_view::npos) path.remove_prefix(src);
  return message + " (at " + std::string(path) + ":" + std::to_string(line) + ")";
}

}  // namespace internal
}  // namespace flotilla
