// CopyRow: copies one row of `dim` floats. Sparse batches copy one short
// row per key, where a memcpy call per row costs more than the copy: rows
// of a multiple of 16 floats (one 64-byte cache line) copy as inlined
// vector moves instead.
#pragma once

#include <cstddef>
#include <cstring>

namespace flotilla::ps {

inline void CopyRow(float* dst, const float* src, size_t dim) {
  if (dim % 16 != 0) {
    std::memcpy(dst, src, dim * sizeof(float));
    return;
  }
  for (size_t c = 0; c < dim; c += 16) std::memcpy(dst + c, src + c, 16 * sizeof(float));
}

}  // namespace flotilla::ps
