// Small string helpers used across layers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flotilla {

// Splits on `sep`; with skip_empty, drops empty pieces ("a,,b" → {"a","b"}).
std::vector<std::string> Split(std::string_view s, char sep, bool skip_empty = true);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
std::string Trim(std::string_view s);
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);
// Two lowercase hex digits per byte.
std::string HexEncode(std::string_view bytes);
// Parses a whole string as an integer; throws InvalidArgument naming `what`.
int64_t ParseInt(std::string_view s, std::string_view what);
double ParseDouble(std::string_view s, std::string_view what);

// "host:port" split; throws InvalidArgument naming `what` when malformed.
struct HostPort {
  std::string host;
  int port = 0;
  std::string ToString() const;
};
HostPort ParseHostPort(std::string_view s, std::string_view what);

}  // namespace flotilla
