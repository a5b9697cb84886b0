#include "comm/shm/shm_names.h"

#include <dirent.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <random>

#include "flotilla/common/strings.h"

namespace flotilla::comm::shm {
namespace {

constexpr const char* kPrefix = "flotilla.";
// Before names carried their owner: "flotilla-<creator pid>-<random>".
constexpr const char* kOldPrefix = "flotilla-";

bool IsNumber(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// Whether the process `pid` that started at `start` (0: unknown) is gone.
bool OwnerGone(int64_t pid, uint64_t start) {
  const uint64_t now = ProcessStartTicks(pid);
  return now == 0 || (start != 0 && now != start);
}

// True when `name` is a Flotilla segment whose owner is gone.
bool Stale(const std::string& name) {
  if (name.rfind(kPrefix, 0) == 0) {
    auto f = Split(name, '.', false);
    if (f.size() != 6 || !IsNumber(f[2]) || !IsNumber(f[3])) return false;
    return OwnerGone(std::atoll(f[2].c_str()), std::strtoull(f[3].c_str(), nullptr, 10));
  }
  if (name.rfind(kOldPrefix, 0) == 0) {
    auto f = Split(name, '-', false);
    if (f.size() != 3 || !IsNumber(f[1])) return false;
    return OwnerGone(std::atoll(f[1].c_str()), 0);
  }
  return false;
}

// Unlinks the entries of `dir` for which `pick(name)` holds.
template <typename Pick>
std::vector<std::string> RemoveWhere(const std::string& dir, const Pick& pick) {
  std::vector<std::string> removed;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return removed;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (pick(name) && ::unlink((dir + "/" + name).c_str()) == 0) removed.push_back(name);
  }
  ::closedir(d);
  return removed;
}

std::string Sanitize(const std::string& job) {
  std::string s;
  for (char c : job) {
    if (s.size() == 32) break;
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') s += c;
  }
  return s.empty() ? "job" : s;
}

}  // namespace

uint64_t ProcessStartTicks(int64_t pid) {
  if (pid <= 0) return 0;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  // Fields after the command (which may hold spaces) in parentheses.
  auto paren = line.rfind(')');
  if (paren == std::string::npos) return 0;
  auto f = Split(line.substr(paren + 1), ' ');
  // f[0] is field 3 (state); the start time is field 22.
  if (f.size() < 20 || f[0] == "Z" || f[0] == "X") return 0;
  return std::strtoull(f[19].c_str(), nullptr, 10);
}

std::string JobKeyOfThisProcess(const std::string& job) {
  const int64_t pid = ::getpid();
  return Sanitize(job) + "." + std::to_string(pid) + "." + std::to_string(ProcessStartTicks(pid));
}

// "<job>.<pid>.<start>" as JobKeyOfThisProcess makes it.
bool ValidKey(const std::string& key) {
  auto f = Split(key, '.', false);
  return f.size() == 3 && Sanitize(f[0]) == f[0] && IsNumber(f[1]) && IsNumber(f[2]);
}

std::string NewSegmentName() {
  const char* job = std::getenv("FLOTILLA_SHM_JOB");
  std::string key = job && ValidKey(job) ? job : JobKeyOfThisProcess("solo");
  std::random_device rd;
  char rnd[24];
  snprintf(rnd, sizeof(rnd), "%08x%08x", rd(), rd());
  return "/" + std::string(kPrefix) + key + "." + std::to_string(::getpid()) + "." + rnd;
}

std::vector<std::string> RemoveStaleSegments(const std::string& dir) {
  return RemoveWhere(dir, [](const std::string& name) { return Stale(name); });
}

std::vector<std::string> RemoveJobSegments(const std::string& key, const std::string& dir) {
  const std::string prefix = kPrefix + key + ".";
  return RemoveWhere(dir, [&](const std::string& name) { return name.rfind(prefix, 0) == 0; });
}

}  // namespace flotilla::comm::shm
