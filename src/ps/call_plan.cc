#include "ps/call_plan.h"

#include <algorithm>
#include <thread>

namespace flotilla::ps {

// One call per server with keys, or, for a share above `split_keys`, parts
// of about that size, at most `max_calls` in all (never fewer than one per
// server).
CallPlan PlanCalls(const std::vector<size_t>& count, size_t split_keys, size_t max_calls) {
  const size_t active = std::count_if(count.begin(), count.end(), [](size_t c) { return c > 0; });
  const size_t max_parts = std::max<size_t>(1, max_calls / std::max<size_t>(1, active));
  const size_t split = std::max<size_t>(1, split_keys);
  CallPlan plan;
  plan.first.assign(count.size(), 0);
  plan.part_size.assign(count.size(), 0);
  for (size_t s = 0; s < count.size(); ++s) {
    if (count[s] == 0) continue;
    const size_t parts = std::clamp<size_t>(count[s] / split + (count[s] % split != 0), 1, max_parts);
    plan.part_size[s] = (count[s] + parts - 1) / parts;
    plan.first[s] = plan.server.size();
    for (size_t left = count[s]; left > 0; left -= std::min(left, plan.part_size[s])) {
      plan.server.push_back(static_cast<int>(s));
      plan.count.push_back(std::min(left, plan.part_size[s]));
    }
  }
  return plan;
}

// A pull's plan: shares above pull_split_keys are split, using at most
// pull_calls calls, or this machine's cores (read once: hardware_concurrency
// reads sysfs).
CallPlan PlanPull(const std::vector<size_t>& count, const PsClientOptions& o) {
  static const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t split = static_cast<size_t>(std::max<int64_t>(1, o.pull_split_keys));
  return PlanCalls(count, split, o.pull_calls > 0 ? static_cast<size_t>(o.pull_calls) : cores);
}

}  // namespace flotilla::ps
