// Collectives expressed through a backend's allreduce (private to comm).
// They move more bytes than dedicated algorithms would, but are correct for
// every backend and every size; none is on a training hot path.
#pragma once

#include "flotilla/comm/backend.h"

namespace flotilla::comm {

// Allreduces a copy of all size*count inputs and keeps block `rank`.
void ReduceScatterViaAllreduce(Backend& backend, int rank, int size, const void* in, void* out,
                               size_t count, DType dtype, ReduceOp op);
// Reduce to `root` as an allreduce in place (every rank gets the result).
void ReduceViaAllreduce(Backend& backend, int size, void* data, size_t count, DType dtype,
                        ReduceOp op, int root);

}  // namespace flotilla::comm
