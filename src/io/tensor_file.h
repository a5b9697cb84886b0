// The bytes of a single-tensor file:
//   "FLTN" | u32 version | u32 dtype | u32 rank | i64 dims[rank] | data | u32 crc32c
// all little-endian, the CRC32C covering everything before it.
#pragma once

#include <string>

#include "flotilla/core/tensor.h"

namespace flotilla::io::internal {

std::string EncodeTensor(const Tensor& tensor);
// Throws Corruption naming `what` (a file, a variable) when the bytes are
// truncated, fail the checksum or describe an impossible tensor.
Tensor DecodeTensor(const std::string& bytes, const std::string& what);

}  // namespace flotilla::io::internal
