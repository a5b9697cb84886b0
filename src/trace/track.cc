#include "flotilla/trace/track.h"

#include <map>
#include <mutex>

namespace flotilla::trace {

namespace {
struct Tracks {
  std::mutex mu;
  std::map<std::string, uint32_t, std::less<>> ids;  // guarded by mu
};
Tracks& Get() {
  static auto* tracks = new Tracks();
  return *tracks;
}
}  // namespace

uint32_t Track(std::string_view name) {
  Tracks& t = Get();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.ids.find(name);
  if (it != t.ids.end()) return it->second;
  const auto id = kFirstTrack + static_cast<uint32_t>(t.ids.size());
  t.ids.emplace(std::string(name), id);
  return id;
}

std::vector<TrackName> AllTracks() {
  Tracks& t = Get();
  std::lock_guard<std::mutex> lock(t.mu);
  std::vector<TrackName> out;
  for (const auto& [name, id] : t.ids) out.push_back({id, name});
  return out;
}

}  // namespace flotilla::trace
