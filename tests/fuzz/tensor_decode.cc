// Fuzzes tensor decoding (io's single-tensor file format, the shape
// arithmetic of core/dims) and what is built from decoded tensors
// (SelectedRows merging and densifying).
//
// Input: a mode byte, then a tensor file. Mode bit 0 clear: the bytes are
// the whole file, checksum included. Set: the bytes are the file without its
// CRC32C trailer, which the target appends, so the fuzzer reaches the header
// checks behind the checksum. A tensor that decodes must encode back to the
// same bytes; with mode bit 1 it is also used as the value of a SelectedRows
// whose rows come from the mode byte.
#include <cstdlib>
#include <cstring>

#include "flotilla/common/checksum.h"
#include "flotilla/common/error.h"
#include "flotilla/core/selected_rows.h"
#include "fuzz/fuzz_input.h"
#include "io/tensor_file.h"

namespace {

using flotilla::Tensor;

std::string WithCrc(std::string body) {
  const uint32_t crc = flotilla::Crc32c(body.data(), body.size());
  body.append(reinterpret_cast<const char*>(&crc), sizeof(crc));
  return body;
}

// Rows [0, n) in a scrambled order (duplicates included) within height 8.
void UseAsSelectedRows(const Tensor& value, uint8_t seed) {
  // Rows and row widths stay small: a [2^61, 0] or [0, 2^61] tensor is valid
  // and holds no bytes, but its dense form would.
  if (value.rank() == 0 || value.dims()[0] > 64) return;
  if (flotilla::Product(value.dims(), 1, value.rank()) > (1 << 12)) return;
  std::vector<int64_t> rows(value.dims()[0]);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = (i * 5 + seed) % 8;
  flotilla::SelectedRows sr(std::move(rows), value, 8);
  Tensor dense = sr.ToDense();
  flotilla::SelectedRows merged = sr.MergeRows();
  if (dense.dims()[0] != 8 || merged.rows().size() > 8) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  flotilla::fuzz::FuzzInput in(data, size);
  const uint8_t mode = in.U8();
  const std::string file = (mode & 1) ? WithCrc(in.Rest()) : in.Rest();
  Tensor t;
  try {
    t = flotilla::io::internal::DecodeTensor(file, "fuzz input");
  } catch (const flotilla::Error&) {
    return 0;  // refused with a named error: what the decoder must do
  }
  if (flotilla::io::internal::EncodeTensor(t) != file) std::abort();
  if (mode & 2) {
    try {
      UseAsSelectedRows(t, mode >> 2);
    } catch (const flotilla::Error&) {
      // a zero-byte [0, 2^40, 2^40] decodes, but its row width is refused
    }
  }
  return 0;
}
