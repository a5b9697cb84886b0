// The process-level entry points of trace.h.
#include "flotilla/trace/trace.h"
#include "trace/runtime.h"

namespace flotilla::trace {

void InitProcess() { Runtime::Get(); }

void StartTimeline(const std::string& path, int64_t max_bytes, int64_t first_step,
                   int64_t last_step) {
  Runtime::Get().StartTimeline({path, max_bytes, first_step, last_step});
}

void StopTimeline() { Runtime::Get().StopTimeline(); }

void FlushTimeline() { Runtime::Get().FlushTimeline(); }

}  // namespace flotilla::trace
