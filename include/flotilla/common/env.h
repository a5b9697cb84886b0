// Reading the environment contract. Every accessor that can fail names the
// variable and what it expected, e.g.
//   InvalidArgument: environment variable PADDLE_TRAINERS_NUM='two' is not an integer
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace flotilla::env {

// The value, or nullopt when unset. An empty value counts as set.
std::optional<std::string> Get(const std::string& name);
// The value; throws NotFound naming `name` when unset. `why` is appended to
// the message ("needed by PaddleCloudRoleMaker").
std::string Require(const std::string& name, const std::string& why = "");
std::string GetOr(const std::string& name, const std::string& fallback);
// Integer value; throws InvalidArgument naming `name` when not an integer.
int64_t GetInt(const std::string& name, int64_t fallback);
int64_t RequireInt(const std::string& name, const std::string& why = "");
// Integer value in [min, max] (ParseIntInRange, flotilla/common/strings.h);
// throws InvalidArgument naming `name`, the value and the range otherwise.
// Unset or empty: `fallback` (not checked).
int64_t GetIntInRange(const std::string& name, int64_t fallback, int64_t min, int64_t max,
                      const std::string& hint = "");
// "1", "true", "yes", "on" (any case) are true; "0", "false", "no", "off" false.
bool GetBool(const std::string& name, bool fallback);
// Comma-separated list; empty items dropped. Unset → empty vector.
std::vector<std::string> GetList(const std::string& name);

}  // namespace flotilla::env
