// Interned strings: events carry 32-bit ids instead of strings, so recording
// one copies no text. Ids are never freed (names are few: op types, variable
// and table names, endpoints). Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace flotilla::trace {

using NameId = uint32_t;
inline constexpr NameId kNoName = 0;  // the empty string

// The id of `s`, the same for equal strings for the life of the process.
// Takes a shared lock (an exclusive one the first time a string is seen);
// cache the id where a call site repeats.
NameId Intern(std::string_view s);
// The string of `id`; the reference stays valid forever. Unknown ids give "".
const std::string& NameOf(NameId id);

}  // namespace flotilla::trace

// The id of a string literal, interned once per call site.
#define FLOTILLA_TRACE_NAME(literal)                                          \
  ([]() -> ::flotilla::trace::NameId {                                        \
    static const ::flotilla::trace::NameId id = ::flotilla::trace::Intern(literal); \
    return id;                                                                \
  }())
