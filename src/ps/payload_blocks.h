// Payload blocks: memory for the large RPC payloads the sparse path writes
// in place (wire_rows.h), kept for reuse. A block goes back to a
// process-wide pool when gRPC releases the slice over it, so steady-state
// calls write their hundreds of kilobytes into memory that is mapped and
// warm, instead of a fresh allocation that page-faults on first touch
// (glibc maps blocks of that size anew on each call until its dynamic
// mmap threshold rises). The pool keeps a few blocks (bounded count and
// bytes); thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include <grpc/slice.h>

namespace flotilla::ps {

// A slice of `bytes` writable bytes at `data`, placed so that data +
// line_at is on a 64-byte boundary. The caller owns one reference to
// `slice` (hand it to grpc::Slice with STEAL_REF).
struct PayloadSlice {
  grpc_slice slice;
  uint8_t* data;
};
PayloadSlice NewPayloadSlice(size_t bytes, size_t line_at = 0);

}  // namespace flotilla::ps
