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
// Parses a whole string as an integer; throws InvalidArgument naming `what`.
int64_t ParseInt(std::string_view s, std::string_view what);
// The one parser for ports, counts and sizes from flags and environment
// variables: a whole integer in [min, max], else InvalidArgument naming
// `what`, the value and the range, e.g.
//   --started_port (PADDLE_START_PORT)=70000 is outside 0..65535 (0: free ports)
// `hint` (may be "") says what the special values mean.
int64_t ParseIntInRange(std::string_view s, std::string_view what, int64_t min, int64_t max,
                        std::string_view hint = "");
// The same check of an integer already parsed (a flag CLI11 read).
int64_t CheckInRange(int64_t value, std::string_view what, int64_t min, int64_t max,
                     std::string_view hint = "");
// The largest TCP port.
constexpr int64_t kMaxPort = 65535;
// The longest timeout a flag or variable may ask for: a year, in ms.
constexpr int64_t kMaxTimeoutMs = 365LL * 24 * 3600 * 1000;
double ParseDouble(std::string_view s, std::string_view what);

// "host:port" split; throws InvalidArgument naming `what` when malformed.
struct HostPort {
  std::string host;
  int port = 0;
  std::string ToString() const;
};
HostPort ParseHostPort(std::string_view s, std::string_view what);

}  // namespace flotilla
