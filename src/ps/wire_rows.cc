#include "ps/wire_rows.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/slice.h>

#include "flotilla/common/enforce.h"
#include "ps/payload_blocks.h"

namespace flotilla::ps {

namespace pb = google::protobuf;
using Wire = pb::internal::WireFormatLite;
using pb::io::CodedOutputStream;

namespace {

// Bytes of a length-delimited field of `bytes` bytes: tag, length, payload.
size_t FieldSize(int field, size_t bytes) {
  const uint32_t tag = Wire::MakeTag(field, Wire::WIRETYPE_LENGTH_DELIMITED);
  return CodedOutputStream::VarintSize32(tag) + CodedOutputStream::VarintSize64(bytes) + bytes;
}

// Writes a length-delimited field's tag and length; its payload goes at the result.
uint8_t* BeginField(int field, size_t bytes, uint8_t* at) {
  at = Wire::WriteTagToArray(field, Wire::WIRETYPE_LENGTH_DELIMITED, at);
  return CodedOutputStream::WriteVarint64ToArray(bytes, at);
}

}  // namespace

RowsRequest::RowsRequest(const pb::MessageLite& head, int rows_field,
                         const rpc::SparseRowsData& rows_head, size_t n, size_t width) {
  const size_t key_bytes = n * sizeof(int64_t), value_bytes = n * width * sizeof(float);
  const size_t head_bytes = head.ByteSizeLong();
  const size_t rows_bytes = rows_head.ByteSizeLong() +
                            FieldSize(rpc::SparseRowsData::kKeysFieldNumber, key_bytes) +
                            (width > 0 ? FieldSize(rpc::SparseRowsData::kValuesFieldNumber, value_bytes) : 0);
  const PayloadSlice slice = NewPayloadSlice(head_bytes + FieldSize(rows_field, rows_bytes));
  uint8_t* at = head.SerializeWithCachedSizesToArray(slice.data);
  at = BeginField(rows_field, rows_bytes, at);
  at = rows_head.SerializeWithCachedSizesToArray(at);
  keys_ = reinterpret_cast<char*>(BeginField(rpc::SparseRowsData::kKeysFieldNumber, key_bytes, at));
  if (width > 0) {
    at = BeginField(rpc::SparseRowsData::kValuesFieldNumber, value_bytes,
                    reinterpret_cast<uint8_t*>(keys_) + key_bytes);
    values_ = reinterpret_cast<char*>(at);
  }
  grpc::Slice owned(slice.slice, grpc::Slice::STEAL_REF);
  buffer_ = grpc::ByteBuffer(&owned, 1);
}

// Laid out as protobuf writes the message (table, values, dim), in a
// payload block placed so that the floats start on a cache line.
PulledRowsReply::PulledRowsReply(const std::string& table, size_t n, int64_t dim) {
  const size_t value_bytes = n * static_cast<size_t>(dim) * sizeof(float);
  const size_t dim_bytes = dim > 0 ? CodedOutputStream::VarintSize32(Wire::MakeTag(
                                         rpc::SparseRowsData::kDimFieldNumber, Wire::WIRETYPE_VARINT)) +
                                         CodedOutputStream::VarintSize64(static_cast<uint64_t>(dim))
                                   : 0;
  const size_t rows_bytes = FieldSize(rpc::SparseRowsData::kTableFieldNumber, table.size()) +
                            FieldSize(rpc::SparseRowsData::kValuesFieldNumber, value_bytes) + dim_bytes;
  const size_t total = FieldSize(rpc::PullSparseResponse::kTablesFieldNumber, rows_bytes);
  const size_t before_values = total - value_bytes - dim_bytes;
  const PayloadSlice slice = NewPayloadSlice(total, before_values);
  uint8_t* at = BeginField(rpc::PullSparseResponse::kTablesFieldNumber, rows_bytes, slice.data);
  at = BeginField(rpc::SparseRowsData::kTableFieldNumber, table.size(), at);
  at = std::copy(table.begin(), table.end(), at);
  at = BeginField(rpc::SparseRowsData::kValuesFieldNumber, value_bytes, at);
  rows_ = {reinterpret_cast<float*>(at), value_bytes / sizeof(float)};
  if (dim > 0) {
    at = Wire::WriteInt64ToArray(rpc::SparseRowsData::kDimFieldNumber, dim, at + value_bytes);
  }
  grpc::Slice owned(slice.slice, grpc::Slice::STEAL_REF);
  buffer_ = grpc::ByteBuffer(&owned, 1);
}

namespace {

// The reading of one reply, with its errors.
class PulledRowsReader {
 public:
  PulledRowsReader(grpc::ByteBuffer& reply, size_t count, const std::string& table,
                   const std::string& from, int64_t& dim, const RowRuns& take)
      : reader_(&reply), in_(&reader_), count_(count), table_(table), from_(from), dim_(dim),
        take_(take) {}

  void Read() {
    int tables = 0;
    while (const uint32_t tag = in_.ReadTag()) {
      if (!IsBytes(tag, rpc::PullSparseResponse::kTablesFieldNumber)) {
        Skip(tag);
        continue;
      }
      if (++tables > 1) Fail("more than one table");
      const auto limit = Enter();
      ReadTable();
      in_.PopLimit(limit);
    }
    if (!in_.ConsumedEntireMessage()) Fail("a malformed reply");
    if (tables == 0) Fail("0 tables");
  }

 private:
  static bool IsBytes(uint32_t tag, int field) {
    return tag == Wire::MakeTag(field, Wire::WIRETYPE_LENGTH_DELIMITED);
  }

  [[noreturn]] void Fail(const std::string& what) const {
    FLOTILLA_THROW(Internal, "parameter server ", from_, " answered PullSparse of '", table_,
                   "' with ", what);
  }

  void Skip(uint32_t tag) {
    if (!Wire::SkipField(&in_, tag)) Fail("a malformed reply");
  }

  // Reads a length and limits the input to it.
  pb::io::CodedInputStream::Limit Enter() {
    uint32_t bytes = 0;
    if (!in_.ReadVarint32(&bytes)) Fail("a malformed reply");
    return in_.PushLimit(static_cast<int>(bytes));
  }

  // One SparseRowsData: its rows are handed over as they are read; its
  // table must be the one asked for, and its dim field (after the rows on
  // the wire) must agree with their width.
  void ReadTable() {
    uint64_t dim_field = 0;
    int64_t width = -1;
    while (const uint32_t tag = in_.ReadTag()) {
      if (IsBytes(tag, rpc::SparseRowsData::kTableFieldNumber)) {
        std::string name;
        if (!Wire::ReadString(&in_, &name)) Fail("a malformed reply");
        if (name != table_) Fail(StrCat("rows of '", name, "'"));
      } else if (IsBytes(tag, rpc::SparseRowsData::kValuesFieldNumber)) {
        width = ReadRows(dim_field);
      } else if (tag == Wire::MakeTag(rpc::SparseRowsData::kDimFieldNumber, Wire::WIRETYPE_VARINT)) {
        if (!in_.ReadVarint64(&dim_field)) Fail("a malformed reply");
      } else {
        Skip(tag);
      }
    }
    if (!in_.ConsumedEntireMessage()) Fail("a malformed reply");
    if (width < 0) Fail(StrCat("no rows for ", count_, " keys"));
    if (dim_field != static_cast<uint64_t>(width)) {
      Fail(StrCat("rows ", width, " floats wide but dim ", dim_field));
    }
  }

  // The row width a values field of `bytes` bytes implies (the dim field,
  // when it came first), checked against the other servers'.
  int64_t Width(uint32_t bytes, uint64_t dim_field) const {
    const size_t row_floats = dim_field > 0 ? dim_field : bytes / sizeof(float) / std::max<size_t>(count_, 1);
    if (row_floats == 0 || bytes != count_ * row_floats * sizeof(float)) {
      Fail(StrCat(bytes, " bytes of rows for ", count_, " keys"));
    }
    const auto width = static_cast<int64_t>(row_floats);
    FLOTILLA_ENFORCE(dim_ <= 0 || dim_ == width, "sparse table '", table_,
                     "' dim differs across servers (", dim_, " here, ", width, " from ", from_, ")");
    return width;
  }

  // Hands the rows of a values field over, run by run as the received
  // slices hold them; returns their width.
  int64_t ReadRows(uint64_t dim_field) {
    uint32_t bytes = 0;
    if (!in_.ReadVarint32(&bytes)) Fail("a malformed reply");
    dim_ = Width(bytes, dim_field);
    const size_t row_bytes = static_cast<size_t>(dim_) * sizeof(float);
    size_t left = bytes, row = 0, partial = 0;  // partial: bytes of a split row in joined_
    while (left > 0) {
      const void* data = nullptr;
      int size = 0;
      if (!in_.GetDirectBufferPointer(&data, &size) || size <= 0) Fail("truncated rows");
      const char* at = static_cast<const char*>(data);
      const size_t avail = std::min<size_t>(left, static_cast<size_t>(size));
      size_t used = 0;
      if (partial > 0) {
        used = std::min(row_bytes - partial, avail);
        std::memcpy(joined_.data() + partial, at, used);
        partial += used;
        if (partial == row_bytes) {
          take_(row++, joined_.data(), 1);
          partial = 0;
        }
      }
      const size_t whole = (avail - used) / row_bytes;
      if (whole > 0) {
        take_(row, at + used, whole);
        row += whole;
        used += whole * row_bytes;
      }
      if (used < avail) {  // the start of a row the next slice ends
        joined_.resize(row_bytes);
        partial = avail - used;
        std::memcpy(joined_.data(), at + used, partial);
        used = avail;
      }
      in_.Skip(static_cast<int>(used));
      left -= used;
    }
    return dim_;
  }

  grpc::ProtoBufferReader reader_;
  pb::io::CodedInputStream in_;
  const size_t count_;
  const std::string& table_;
  const std::string& from_;
  int64_t& dim_;
  const RowRuns& take_;
  std::vector<char> joined_;
};

}  // namespace

void ReadPulledRows(grpc::ByteBuffer& reply, size_t count, const std::string& table,
                    const std::string& from, int64_t& dim, const RowRuns& take) {
  PulledRowsReader(reply, count, table, from, dim, take).Read();
}

}  // namespace flotilla::ps
