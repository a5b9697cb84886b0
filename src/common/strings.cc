#include "flotilla/common/strings.h"

#include <charconv>
#include <cstdlib>

#include "flotilla/common/enforce.h"

namespace flotilla {

std::vector<std::string> Split(std::string_view s, char sep, bool skip_empty) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    if (!skip_empty || end > start) out.emplace_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

int64_t ParseInt(std::string_view s, std::string_view what) {
  std::string t = Trim(s);
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size()) {
    FLOTILLA_THROW(InvalidArgument, what, "='", s, "' is not an integer");
  }
  return value;
}

int64_t CheckInRange(int64_t value, std::string_view what, int64_t min, int64_t max,
                     std::string_view hint) {
  if (value < min || value > max) {
    FLOTILLA_THROW(InvalidArgument, what, "=", value, " is outside ", min, "..", max,
                   hint.empty() ? "" : " (", hint, hint.empty() ? "" : ")");
  }
  return value;
}

int64_t ParseIntInRange(std::string_view s, std::string_view what, int64_t min, int64_t max,
                        std::string_view hint) {
  std::string t = Trim(s);
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec == std::errc::result_out_of_range) {  // out of int64: out of any range
    FLOTILLA_THROW(InvalidArgument, what, "=", t, " is outside ", min, "..", max,
                   hint.empty() ? "" : " (", hint, hint.empty() ? "" : ")");
  }
  return CheckInRange(ParseInt(s, what), what, min, max, hint);
}

double ParseDouble(std::string_view s, std::string_view what) {
  std::string t = Trim(s);
  char* end = nullptr;
  double value = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size()) {
    FLOTILLA_THROW(InvalidArgument, what, "='", s, "' is not a number");
  }
  return value;
}

std::string HostPort::ToString() const { return host + ":" + std::to_string(port); }

HostPort ParseHostPort(std::string_view s, std::string_view what) {
  std::string t = Trim(s);
  auto colon = t.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == t.size()) {
    FLOTILLA_THROW(InvalidArgument, what, "='", s, "' is not of the form host:port");
  }
  HostPort hp;
  hp.host = t.substr(0, colon);
  if (hp.host.size() > 2 && hp.host.front() == '[' && hp.host.back() == ']') {
    hp.host = hp.host.substr(1, hp.host.size() - 2);
  }
  hp.port = static_cast<int>(
      ParseIntInRange(t.substr(colon + 1), StrCat(what, " '", s, "' port"), 1, kMaxPort));
  return hp;
}

}  // namespace flotilla
