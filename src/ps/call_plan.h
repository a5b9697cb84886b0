// How a sparse call's keys are split into RPCs: the route of each key to
// its server, the plan of calls per server (a large share split into parts
// sent in parallel), and the passes that place each key in its call.
// Pure functions of their arguments; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <span>
#include <vector>

#include "flotilla/ps/client.h"

namespace flotilla::ps {

// Where a batch's keys go: server[i] holds key i (empty when there is
// one server), count[s] keys go to server s.
struct KeyRoute {
  std::vector<uint32_t> server;
  std::vector<size_t> count;
  uint32_t ServerOf(size_t i) const { return server.empty() ? 0 : server[i]; }
};

// How a sparse call's keys map onto RPCs: server s's share goes to calls
// first[s] .. first[s] + parts - 1, each of part_size[s] keys (the last
// fewer), in the order the keys come.
struct CallPlan {
  std::vector<int> server;               // per call
  std::vector<size_t> count;             // per call
  std::vector<size_t> first, part_size;  // per server
};

// One call per server with keys, or, for a share above `split_keys`, parts
// of about that size, at most `max_calls` in all (never fewer than one per
// server).
CallPlan PlanCalls(const std::vector<size_t>& count, size_t split_keys, size_t max_calls);

// A pull's plan: shares above pull_split_keys are split, using at most
// pull_calls calls, or this machine's cores (read once: hardware_concurrency
// reads sysfs).
CallPlan PlanPull(const std::vector<size_t>& count, const PsClientOptions& options);

// Visits the keys in order with the call each belongs to: fn(i, call).
// When no server's share is split, a key's call is its server's one call.
template <typename Fn>
void ForEachPlannedKey(const CallPlan& plan, const KeyRoute& route, size_t keys,
                       Fn&& fn) {
  bool split = false;
  for (size_t s = 0; s < route.count.size(); ++s) split |= route.count[s] > plan.part_size[s];
  if (!split) {
    for (size_t i = 0; i < keys; ++i) fn(i, plan.first[route.ServerOf(i)]);
    return;
  }
  std::vector<size_t> call(plan.first), left(plan.part_size);
  for (size_t i = 0; i < keys; ++i) {
    const uint32_t s = route.ServerOf(i);
    if (left[s] == 0) {
      ++call[s];
      left[s] = plan.part_size[s];
    }
    --left[s];
    fn(i, call[s]);
  }
}

// Fills each call's positions (and with kWithKeys its keys, at
// key_out[c], unaligned) in key order, in one pass over the keys. One call
// takes every key in order.
template <bool kWithKeys>
void PlaceKeys(const CallPlan& plan, const KeyRoute& route,
               std::span<const int64_t> keys, std::vector<std::vector<uint32_t>>& positions,
               char* const* key_out) {
  const size_t calls = plan.server.size();
  if (calls == 1) {
    std::iota(positions[0].begin(), positions[0].end(), 0u);
    if (kWithKeys) std::memcpy(key_out[0], keys.data(), keys.size_bytes());
    return;
  }
  std::vector<uint32_t*> pos(calls);
  std::vector<char*> out(calls, nullptr);
  for (size_t c = 0; c < calls; ++c) {
    pos[c] = positions[c].data();
    if (kWithKeys) out[c] = key_out[c];
  }
  ForEachPlannedKey(plan, route, keys.size(), [&](size_t i, size_t c) {
    *pos[c]++ = static_cast<uint32_t>(i);
    if (kWithKeys) {
      std::memcpy(out[c], &keys[i], sizeof(int64_t));
      out[c] += sizeof(int64_t);
    }
  });
}

}  // namespace flotilla::ps
