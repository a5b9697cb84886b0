#include "flotilla/common/env.h"

#include <algorithm>
#include <cstdlib>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"

namespace flotilla::env {

std::optional<std::string> Get(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::string Require(const std::string& name, const std::string& why) {
  auto value = Get(name);
  if (!value) {
    FLOTILLA_THROW(NotFound, "environment variable ", name, " is not set",
                   why.empty() ? "" : " (", why, why.empty() ? "" : ")");
  }
  return *value;
}

std::string GetOr(const std::string& name, const std::string& fallback) {
  return Get(name).value_or(fallback);
}

int64_t GetInt(const std::string& name, int64_t fallback) {
  auto value = Get(name);
  if (!value || Trim(*value).empty()) return fallback;
  return ParseInt(*value, "environment variable " + name);
}

int64_t RequireInt(const std::string& name, const std::string& why) {
  return ParseInt(Require(name, why), "environment variable " + name);
}

int64_t GetIntInRange(const std::string& name, int64_t fallback, int64_t min, int64_t max,
                      const std::string& hint) {
  auto value = Get(name);
  if (!value || Trim(*value).empty()) return fallback;
  return ParseIntInRange(*value, "environment variable " + name, min, max, hint);
}

bool GetBool(const std::string& name, bool fallback) {
  auto value = Get(name);
  if (!value) return fallback;
  std::string v = Trim(*value);
  std::transform(v.begin(), v.end(), v.begin(), ::tolower);
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off" || v.empty()) return false;
  FLOTILLA_THROW(InvalidArgument, "environment variable ", name, "='", *value,
                 "' is not a boolean (expected 1/0, true/false, yes/no, on/off)");
}

std::vector<std::string> GetList(const std::string& name) {
  auto value = Get(name);
  if (!value) return {};
  std::vector<std::string> out;
  for (auto& item : Split(*value, ',')) {
    auto t = Trim(item);
    if (!t.empty()) out.push_back(t);
  }
  return out;
}

}  // namespace flotilla::env
