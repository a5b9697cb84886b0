#include "fleet/ring_registry.h"

#include <map>
#include <mutex>
#include <utility>

#include "flotilla/common/enforce.h"

namespace flotilla::fleet {

namespace {

struct Rings {
  std::mutex mu;
  int next_id = 0;                                            // guarded by mu
  std::map<int, std::shared_ptr<comm::ProcessGroup>> groups;  // guarded by mu
};

Rings& rings() {
  static auto* r = new Rings();
  return *r;
}

}  // namespace

int RegisterRing(std::shared_ptr<comm::ProcessGroup> group) {
  FLOTILLA_ENFORCE(group != nullptr, "RegisterRing: null process group");
  std::lock_guard<std::mutex> lock(rings().mu);
  int id = rings().next_id++;
  rings().groups[id] = std::move(group);
  return id;
}

std::shared_ptr<comm::ProcessGroup> GetRing(int ring_id) {
  std::lock_guard<std::mutex> lock(rings().mu);
  auto it = rings().groups.find(ring_id);
  FLOTILLA_CHECK(it != rings().groups.end(), NotFound, "ring ", ring_id,
                 " has no process group in this process (was the program transpiled by a "
                 "fleet that has been shut down?)");
  FLOTILLA_CHECK(it->second != nullptr, Unavailable, "ring ", ring_id,
                 " is being re-formed after a lost peer");
  return it->second;
}

void UnregisterRing(int ring_id) {
  std::lock_guard<std::mutex> lock(rings().mu);
  rings().groups.erase(ring_id);
}

void ReplaceRing(int ring_id, std::shared_ptr<comm::ProcessGroup> group) {
  std::shared_ptr<comm::ProcessGroup> old;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(rings().mu);
  auto it = rings().groups.find(ring_id);
  FLOTILLA_CHECK(it != rings().groups.end(), NotFound, "ring ", ring_id, " is not registered");
  old = std::exchange(it->second, std::move(group));
}

}  // namespace flotilla::fleet
