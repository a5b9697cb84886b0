// CopyRow: copies one row of `dim` floats. Sparse batches copy one short
// row per key, where a memcpy call per row costs more than the copy: rows
// of a multiple of 16 floats (one 64-byte cache line) copy as inlined
// vector moves instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace flotilla::ps {

inline void CopyRow(float* dst, const float* src, size_t dim) {
  if (dim % 16 != 0) {
    std::memcpy(dst, src, dim * sizeof(float));
    return;
  }
  for (size_t c = 0; c < dim; c += 16) std::memcpy(dst + c, src + c, 16 * sizeof(float));
}

// Row j of `rows` ([positions.size(), dim]) to row positions[j] of dst.
inline void ScatterRows(std::span<const uint32_t> positions, const float* rows, int64_t dim,
                        float* dst) {
  const size_t d = static_cast<size_t>(dim);
  for (size_t j = 0; j < positions.size(); ++j) CopyRow(dst + positions[j] * d, rows + j * d, d);
}

}  // namespace flotilla::ps
