// Ragged batches for the sequence ops' tests: kRagged holds an empty
// sequence, one of length 1 and a long one (lengths 3, 0, 1, 25).
#pragma once

#include "flotilla/core/lod.h"
#include "flotilla/core/tensor.h"
#include "framework/ops/testing/grad_check.h"

namespace flotilla::testing {

inline const LoD kRagged = {{0, 3, 3, 4, 29}};

// A tensor of `dims` uniform in [lo, hi) (seeded), carrying `lod`.
inline Tensor Sequences(const Dims& dims, const LoD& lod, unsigned seed, double lo = -1, double hi = 1) {
  Tensor t = RandomTensor(dims, lo, hi, seed);
  t.set_lod(lod);
  return t;
}

}  // namespace flotilla::testing
