// CRC-32C (Castagnoli) for checkpoint and table files.
#pragma once

#include <cstddef>
#include <cstdint>

namespace flotilla {

// Extends `crc` (0 to start) over n bytes.
uint32_t Crc32c(const void* data, size_t n, uint32_t crc = 0);

}  // namespace flotilla
