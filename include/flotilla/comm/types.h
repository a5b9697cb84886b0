// Reduction operators shared by every collective.
#pragma once

#include <string>

namespace flotilla::comm {

// kAvg is the sum divided by the group size (integer division for integer
// dtypes).
enum class ReduceOp { kSum, kAvg, kMax, kMin, kProd };

const char* ReduceOpName(ReduceOp op);

}  // namespace flotilla::comm
