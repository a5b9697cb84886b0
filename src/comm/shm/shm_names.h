// Names of Flotilla's shared-memory segments (private to comm): the naming
// scheme and the clean-up of names left behind are described in
// flotilla/comm/shm_cleanup.h.
#pragma once

#include <cstdint>
#include <string>

#include "flotilla/comm/shm_cleanup.h"

namespace flotilla::comm::shm {

// A fresh segment name (with the leading '/'): under FLOTILLA_SHM_JOB when
// set, else owned by this process.
std::string NewSegmentName();

// Start time of `pid` in clock ticks after boot; 0 when there is no such
// process (or it is a zombie).
uint64_t ProcessStartTicks(int64_t pid);

}  // namespace flotilla::comm::shm
