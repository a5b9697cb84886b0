// FLOTILLA_ENFORCE* and FLOTILLA_THROW: checks that throw a flotilla::Error
// whose message carries the caller's context and the file:line of the check.
//
//   FLOTILLA_ENFORCE(dims.size() == 2, "fc input '", name, "' must be 2-D");
//   FLOTILLA_ENFORCE_EQ(x.numel(), y.numel(), "in op '", type, "'");
//   FLOTILLA_THROW(NotFound, "variable '", name, "' is not in the scope");
#pragma once

#include <sstream>
#include <string>
#include <utility>

#include "flotilla/common/error.h"

namespace flotilla {

// Concatenates anything that has an operator<< into one string.
template <typename... Args>
std::string StrCat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

namespace internal {
std::string WithLocation(const std::string& message, const char* file, int line);
}  // namespace internal

}  // namespace flotilla

#define FLOTILLA_THROW(Type, ...)                                          \
  throw ::flotilla::Type(::flotilla::internal::WithLocation(               \
      ::flotilla::StrCat(__VA_ARGS__), __FILE__, __LINE__))

// Throws InvalidArgument unless cond holds.
#define FLOTILLA_ENFORCE(cond, ...)                                        \
  do {                                                                     \
    if (!(cond)) FLOTILLA_THROW(InvalidArgument, __VA_ARGS__);             \
  } while (0)

// Throws `Type` unless cond holds.
#define FLOTILLA_CHECK(cond, Type, ...)                                    \
  do {                                                                     \
    if (!(cond)) FLOTILLA_THROW(Type, __VA_ARGS__);                        \
  } while (0)

#define FLOTILLA_ENFORCE_OP_(a, b, op, ...)                                \
  do {                                                                     \
    const auto& flotilla_a_ = (a);                                         \
    const auto& flotilla_b_ = (b);                                         \
    if (!(flotilla_a_ op flotilla_b_))                                     \
      FLOTILLA_THROW(InvalidArgument, ::flotilla::StrCat(__VA_ARGS__),     \
                     " [expected " #a " " #op " " #b ", but got ",         \
                     flotilla_a_, " vs ", flotilla_b_, "]");               \
  } while (0)

#define FLOTILLA_ENFORCE_EQ(a, b, ...) FLOTILLA_ENFORCE_OP_(a, b, ==, __VA_ARGS__)
#define FLOTILLA_ENFORCE_NE(a, b, ...) FLOTILLA_ENFORCE_OP_(a, b, !=, __VA_ARGS__)
#define FLOTILLA_ENFORCE_LT(a, b, ...) FLOTILLA_ENFORCE_OP_(a, b, <, __VA_ARGS__)
#define FLOTILLA_ENFORCE_LE(a, b, ...) FLOTILLA_ENFORCE_OP_(a, b, <=, __VA_ARGS__)
#define FLOTILLA_ENFORCE_GT(a, b, ...) FLOTILLA_ENFORCE_OP_(a, b, >, __VA_ARGS__)
#define FLOTILLA_ENFORCE_GE(a, b, ...) FLOTILLA_ENFORCE_OP_(a, b, >=, __VA_ARGS__)
