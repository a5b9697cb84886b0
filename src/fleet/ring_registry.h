// Rings: the process groups collective ops run on, by id. The collective
// pass writes a ring id into each op it inserts; the op kernels look the
// group up here. Ids are unique in the process (never reused), so several
// fleets — ranks run as threads in tests — can share one process.
// Thread-safe.
#pragma once

#include <memory>

#include "flotilla/comm/process_group.h"

namespace flotilla::fleet {

// Registers `group` and returns its new ring id.
int RegisterRing(std::shared_ptr<comm::ProcessGroup> group);
// Throws NotFound naming the ring when it is not registered (a program
// transpiled by a fleet that no longer exists, or in another process).
std::shared_ptr<comm::ProcessGroup> GetRing(int ring_id);
void UnregisterRing(int ring_id);
// Points `ring_id` at another group (a re-formed one), or at none while it
// is rebuilt: GetRing then throws Unavailable.
void ReplaceRing(int ring_id, std::shared_ptr<comm::ProcessGroup> group);

}  // namespace flotilla::fleet
