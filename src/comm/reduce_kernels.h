// Element-wise reduction kernels on raw buffers, dispatched on DType. Plain
// loops the compiler vectorises; `dst` may alias `a` (in-place accumulate).
#pragma once

#include <cstddef>

#include "flotilla/comm/types.h"
#include "flotilla/core/dtype.h"

namespace flotilla::comm {

// dst[i] = a[i] op b[i]; kAvg reduces as a sum (divide with DivideBy).
void ReduceInto(void* dst, const void* a, const void* b, size_t count, DType dtype, ReduceOp op);
// data[i] /= divisor (integer division for integer dtypes).
void DivideBy(void* data, size_t count, DType dtype, int divisor);

}  // namespace flotilla::comm
