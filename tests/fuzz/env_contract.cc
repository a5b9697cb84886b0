// Fuzzes the launcher's reading of its environment and command-line lists:
// the role-resolution chain over every family's variables (RoleEnvironment),
// Slurm hostlists, --np ranges, etcd endpoint lists, host:port, and the
// child environment built from an inherited one.
//
// Input: text; its lines are the environment ("NAME=value"), and each of
// the first 16 lines is also given to every list parser.
#include <cstdlib>
#include <map>

#include "flotilla/common/error.h"
#include "flotilla/common/strings.h"
#include "launch/elastic/etcd_client.h"
#include "launch/elastic/membership.h"
#include "launch/env_contract.h"
#include "flotilla/roles/hostlist.h"
#include "flotilla/roles/role_env.h"

namespace flotilla::fuzz {
namespace {

template <typename Fn>
void Refusable(Fn&& fn) {
  try {
    fn();
  } catch (const Error&) {
    // refused with a named error
  }
}

void ReadRoles(const std::map<std::string, std::string>& env) {
  using roles::RoleField;
  auto role = roles::RoleEnvironment::Read([&](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
  (void)role.Explain();
  (void)role.Summary();
  for (RoleField f : {RoleField::kRank, RoleField::kWorldSize, RoleField::kLocalRank,
                      RoleField::kLocalWorldSize, RoleField::kNodeRank, RoleField::kNnodes}) {
    Refusable([&] { (void)role.Int(f); });
  }
}

// A range that parses holds the numbers written, not wrapped ones.
void CheckNp(const std::string& text) {
  const launch::NodeRange r = launch::ParseNp(text);
  const auto parts = Split(text, ':', /*skip_empty=*/false);
  if (ParseInt(Trim(parts[0]), "min") != r.min || ParseInt(Trim(parts.back()), "max") != r.max) {
    std::abort();
  }
}

void CheckHostlist(const std::string& text) {
  const auto hosts = roles::ExpandHostlist(text);
  if (hosts.size() > roles::kMaxHostlistHosts) std::abort();
  for (const auto& h : hosts) {
    if (h.empty()) std::abort();
  }
}

void ParseLists(const std::string& line) {
  Refusable([&] { CheckHostlist(line); });
  Refusable([&] { CheckNp(line); });
  Refusable([&] { (void)launch::ParseEtcdEndpoints(line); });
  Refusable([&] { (void)ParseHostPort(line, "fuzz endpoint"); });
}

}  // namespace
}  // namespace flotilla::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flotilla::fuzz;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> lines = flotilla::Split(text, '\n');
  std::map<std::string, std::string> env;
  for (const auto& line : lines) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  Refusable([&] { ReadRoles(env); });
  for (size_t i = 0; i < lines.size() && i < 16; ++i) ParseLists(lines[i]);
  Refusable([&] {
    (void)flotilla::launch::ChildEnvironment(lines, {{"PADDLE_TRAINER_ID", "0"}});
    (void)flotilla::launch::ThreadDefaults(lines, 2, 8);
  });
  return 0;
}
