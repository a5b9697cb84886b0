// The bytes of a single-tensor file:
//   "FLTN" | u32 version | u32 dtype | u32 rank | i64 dims[rank] | [lod] | data | u32 crc32c
// all little-endian, the CRC32C covering everything before it. Version 1 has
// no [lod]; version 2 (written only for a tensor with sequence offsets) has
//   u32 levels | per level: u64 count | i64 offsets[count]
#pragma once

#include <string>

#include "flotilla/core/tensor.h"

namespace flotilla::io::internal {

std::string EncodeTensor(const Tensor& tensor);
// Throws Corruption naming `what` (a file, a variable) when the bytes are
// truncated, fail the checksum or describe an impossible tensor.
Tensor DecodeTensor(const std::string& bytes, const std::string& what);

}  // namespace flotilla::io::internal
