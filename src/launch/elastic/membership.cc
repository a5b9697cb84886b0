#include "launch/elastic/membership.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"
#include "launch/rendezvous.h"

namespace flotilla::launch {

using nlohmann::json;

std::string EncodeMember(const Member& m) {
  return json{{"host", m.id.host}, {"procs", json::parse(EncodeProcesses(m.procs))}}.dump();
}

Member DecodeMember(const std::string& key, const std::string& value, int64_t lease,
                    int64_t create_revision) {
  Member m;
  try {
    json j = json::parse(value);
    m.id = {j.at("host").get<std::string>(), lease};
    m.procs = DecodeProcesses(j.at("procs").dump());
  } catch (const json::exception& e) {
    FLOTILLA_THROW(Corruption, "etcd key ", key, " holds a malformed node record: ", e.what());
  }
  m.create_revision = create_revision;
  return m;
}

std::string EncodeWorld(const WorldRecord& w) {
  json members = json::array();
  for (const auto& m : w.members) members.push_back({{"host", m.host}, {"lease", m.lease}});
  return json{{"gen", w.gen}, {"members", members}}.dump();
}

WorldRecord DecodeWorld(const std::string& value, int64_t mod_revision) {
  WorldRecord w;
  try {
    json j = json::parse(value);
    w.gen = j.at("gen").get<int64_t>();
    for (const auto& m : j.at("members")) {
      w.members.push_back({m.at("host").get<std::string>(), m.at("lease").get<int64_t>()});
    }
  } catch (const json::exception& e) {
    FLOTILLA_THROW(Corruption, "the elastic job's world record is malformed: ", e.what());
  }
  w.mod_revision = mod_revision;
  return w;
}

bool Contains(const std::vector<MemberId>& ids, const MemberId& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

std::vector<std::string> Hosts(const std::vector<MemberId>& ids) {
  std::vector<std::string> hosts;
  for (const auto& m : ids) hosts.push_back(m.host);
  return hosts;
}

std::vector<MemberId> AssignWorld(const std::vector<MemberId>& previous,
                                  const std::vector<Member>& alive, int max_nodes) {
  std::vector<MemberId> live;
  for (const auto& m : alive) live.push_back(m.id);
  const size_t n = std::min(live.size(), static_cast<size_t>(std::max(max_nodes, 0)));
  std::vector<std::optional<MemberId>> slots(n);
  std::vector<MemberId> waiting;  // survivors without their index, then newcomers
  for (size_t i = 0; i < previous.size(); ++i) {
    if (!Contains(live, previous[i])) continue;
    if (i < n) {
      slots[i] = previous[i];
    } else {
      waiting.push_back(previous[i]);
    }
  }
  for (const auto& id : live) {
    if (!Contains(previous, id)) waiting.push_back(id);
  }
  std::vector<MemberId> world;
  size_t next = 0;
  for (auto& slot : slots) {
    if (!slot && next < waiting.size()) slot = waiting[next++];
    if (slot) world.push_back(*slot);
  }
  return world;
}

int WorldCap(const NodeRange& np, const std::optional<std::string>& target) {
  if (!target) return np.max;
  int64_t n = 0;
  try {
    n = ParseInt(*target, "the elastic job's target");
  } catch (const Error&) {
    FLOTILLA_THROW(Corruption, "the elastic job's target key holds '", *target,
                   "', not a number of nodes");
  }
  return static_cast<int>(std::clamp<int64_t>(n, np.min, np.max));
}

NodeRange ParseNp(const std::string& np) {
  std::vector<std::string> parts = Split(np, ':', /*skip_empty=*/false);
  FLOTILLA_ENFORCE(parts.size() == 1 || parts.size() == 2, "--np '", np,
                   "' must be N or MIN:MAX (numbers of nodes)");
  // Checked as read, before narrowing: a huge number must not wrap to a small one.
  const int64_t min = ParseInt(Trim(parts[0]), "--np");
  const int64_t max = parts.size() == 2 ? ParseInt(Trim(parts[1]), "--np") : min;
  constexpr int64_t kMost = std::numeric_limits<int>::max();
  FLOTILLA_ENFORCE(min >= 1 && max >= min && max <= kMost, "--np '", np,
                   "' needs 1 <= MIN <= MAX <= ", kMost, " (got MIN ", min, ", MAX ", max, ")");
  return NodeRange{static_cast<int>(min), static_cast<int>(max)};
}

}  // namespace flotilla::launch
