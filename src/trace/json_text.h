// Small helpers for writing JSON by hand on hot-ish paths (the timeline
// writer formats thousands of events per second). Private to trace.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace flotilla::trace {

// Appends `s` as a JSON string literal (quotes included).
inline void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

// Nanoseconds as microseconds with three decimals ("12.345").
inline void AppendMicros(std::string& out, int64_t ns) {
  char buf[32];
  const bool neg = ns < 0;
  const uint64_t a = neg ? uint64_t(-ns) : uint64_t(ns);
  int n = std::snprintf(buf, sizeof(buf), "%s%llu.%03llu", neg ? "-" : "",
                        static_cast<unsigned long long>(a / 1000),
                        static_cast<unsigned long long>(a % 1000));
  out.append(buf, n);
}

inline void AppendDouble(std::string& out, double v) {
  char buf[32];
  int n = std::snprintf(buf, sizeof(buf), "%.6g", v);
  if (std::string_view(buf, n).find_first_of("ni") != std::string_view::npos) {
    out += "null";  // nan / inf are not JSON
    return;
  }
  out.append(buf, n);
}

}  // namespace flotilla::trace
