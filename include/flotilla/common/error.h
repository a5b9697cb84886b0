// Flotilla's one error policy: library code throws a subclass of
// flotilla::Error; it never aborts. Each subclass names a kind of failure
// that a caller may want to handle differently (retry on Unavailable, give up
// on Corruption). Messages name the thing at fault and what was expected.
#pragma once

#include <stdexcept>
#include <string>

namespace flotilla {

enum class ErrorCode {
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kUnavailable,
  kDeadlineExceeded,
  kCorruption,
  kUnimplemented,
  kInternal,
  kCancelled,  // the caller asked to stop (a signal): not a failure to retry
};

// Returns "InvalidArgument", "NotFound", ...
const char* ErrorCodeName(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

#define FLOTILLA_DEFINE_ERROR(Name)                                   \
  class Name : public Error {                                         \
   public:                                                            \
    explicit Name(const std::string& message)                         \
        : Error(ErrorCode::k##Name, message) {}                       \
  };

// A caller passed something malformed: a wrong shape, an unknown flag.
FLOTILLA_DEFINE_ERROR(InvalidArgument)
// A named thing (variable, file, key, op) does not exist.
FLOTILLA_DEFINE_ERROR(NotFound)
FLOTILLA_DEFINE_ERROR(AlreadyExists)
// A peer or service cannot be reached; retrying later may help.
FLOTILLA_DEFINE_ERROR(Unavailable)
// A wait ran out of time; the message names who did not arrive.
FLOTILLA_DEFINE_ERROR(DeadlineExceeded)
// Stored data fails its checksum or cannot be parsed.
FLOTILLA_DEFINE_ERROR(Corruption)
FLOTILLA_DEFINE_ERROR(Unimplemented)
// A broken invariant inside Flotilla: a bug.
FLOTILLA_DEFINE_ERROR(Internal)

#undef FLOTILLA_DEFINE_ERROR

}  // namespace flotilla
