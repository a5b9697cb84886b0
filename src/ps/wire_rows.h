// Sparse rows between a trainer's memory and gRPC's buffers without an
// intermediate protobuf message. A request is laid out in one slice that
// the caller fills with keys and rows in place (a push gathers its rows
// straight onto the wire); a pull's reply is read from the received slices
// and handed over row run by row run (scattered straight into the caller's
// rows). The bytes are ps.proto's messages, so servers parse them as any
// other request: only the trainer's copies go away (the message's strings,
// each hundreds of kilobytes, filled then copied again by serialisation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include <google/protobuf/message_lite.h>
#include <grpcpp/support/byte_buffer.h>

#include "ps/ps.pb.h"

namespace flotilla::ps {

// One request message: `head`'s fields (its repeated rows field left
// empty), then one SparseRowsData in field `rows_field` with `rows_head`'s
// fields (table, learning rate), `n` keys and, when `width` > 0, n * width
// floats. The caller writes the keys at keys() and the floats at values()
// (unaligned: write them with memcpy) before the buffer is sent. Moving
// the object keeps the pointers valid.
class RowsRequest {
 public:
  RowsRequest(const google::protobuf::MessageLite& head, int rows_field,
              const rpc::SparseRowsData& rows_head, size_t n, size_t width);

  char* keys() const { return keys_; }
  char* values() const { return values_; }
  const grpc::ByteBuffer& buffer() const { return buffer_; }

 private:
  grpc::ByteBuffer buffer_;
  char* keys_ = nullptr;
  char* values_ = nullptr;
};

// A PullSparseResponse of one table's `n` rows of `dim` floats, which the
// server writes in place at rows() (aligned for floats and on a cache
// line) before sending the buffer: the reply is never copied.
class PulledRowsReply {
 public:
  PulledRowsReply(const std::string& table, size_t n, int64_t dim);

  std::span<float> rows() const { return rows_; }
  grpc::ByteBuffer& buffer() { return buffer_; }

 private:
  grpc::ByteBuffer buffer_;
  std::span<float> rows_;
};

// Rows of a reply, in order: take(first, rows, n) receives rows first ..
// first + n - 1 of the reply at `rows` (n * dim floats, unaligned bytes).
using RowRuns = std::function<void(size_t first, const char* rows, size_t n)>;

// Reads a PullSparseResponse that must carry one SparseRowsData of `count`
// rows, handing its rows to `take` straight from the received slices (a
// row split between two slices is joined in a small buffer first). `dim`:
// the row width when known (> 0), else set from the reply. Throws Internal
// naming `from` and `table` when the reply is malformed, carries another
// table, number of tables or rows, or rows of another width; rows already
// handed over stay handed over.
void ReadPulledRows(grpc::ByteBuffer& reply, size_t count, const std::string& table,
                    const std::string& from, int64_t& dim, const RowRuns& take);

}  // namespace flotilla::ps
