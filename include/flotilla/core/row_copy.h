// CopyRow: copies one row of `dim` floats. Sparse batches copy one short
// row per key, where a memcpy call per row costs more than the copy: rows
// of a multiple of 16 floats (one 64-byte cache line) copy as inlined
// vector moves instead. Either side may be unaligned (rows read straight
// from received RPC bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace flotilla {

inline void CopyRow(void* dst, const void* src, size_t dim) {
  if (dim % 16 != 0) {
    std::memcpy(dst, src, dim * sizeof(float));
    return;
  }
  constexpr size_t kLine = 16 * sizeof(float);
  char* to = static_cast<char*>(dst);
  const char* from = static_cast<const char*>(src);
  for (size_t c = 0; c < dim * sizeof(float); c += kLine) std::memcpy(to + c, from + c, kLine);
}

// Row j of `rows` ([positions.size(), dim] floats, possibly unaligned) to
// row positions[j] of dst.
inline void ScatterRows(std::span<const uint32_t> positions, const void* rows, int64_t dim,
                        float* dst) {
  const size_t d = static_cast<size_t>(dim);
  const char* from = static_cast<const char*>(rows);
  for (size_t j = 0; j < positions.size(); ++j) {
    CopyRow(dst + positions[j] * d, from + j * d * sizeof(float), d);
  }
}

}  // namespace flotilla
