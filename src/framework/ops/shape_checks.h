// Small shape and message helpers shared by the math, elementwise, reduce and
// tensor op families. Each works on both an InferShapeContext (compile-time
// dims, where -1 is an unknown batch size) and an ExecutionContext.
#pragma once

#include <cstdint>
#include <string>

#include "flotilla/core/dims.h"
#include "flotilla/framework/desc.h"

namespace flotilla::ops {

// True when both sizes are known and differ; an unknown (-1) size matches
// anything until run time.
inline bool KnownAndDiffer(int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; }

inline bool HasUnknownDim(const Dims& dims) {
  for (int64_t d : dims) {
    if (d < 0) return true;
  }
  return false;
}

// "X ('fc_0.w_0') of shape [3, 4]" for error messages: the slot, the variable
// bound to it, and its dims.
template <typename Ctx>
std::string DescribeInput(const Ctx& ctx, const std::string& slot, const Dims& dims,
                          size_t i = 0) {
  const auto& names = ctx.op().Inputs(slot);
  std::string name = i < names.size() ? names[i] : std::string("?");
  return StrCat(slot, " ('", name, "') of shape ", DimsToString(dims));
}

}  // namespace flotilla::ops
