// Virtual rows of a process's timeline, for work that is not one thread's:
// the calls in flight to one parameter server ("rpc → 127.0.0.1:6171"), a
// communicator's queue. Spans put there with Span::OnTrack(id) may come
// from any thread. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flotilla::trace {

// The id of the row named `name` (created on first use; ids ≥ kFirstTrack).
uint32_t Track(std::string_view name);
inline constexpr uint32_t kFirstTrack = 1u << 20;

struct TrackName {
  uint32_t id;
  std::string name;
};
// Every row created so far.
std::vector<TrackName> AllTracks();

}  // namespace flotilla::trace
