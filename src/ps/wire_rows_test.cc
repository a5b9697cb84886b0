#include "ps/wire_rows.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include <grpcpp/support/slice.h>

#include "flotilla/common/error.h"

namespace flotilla::ps {
namespace {

std::string Bytes(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const auto& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

// `bytes` as received in slices of `piece` bytes (the last shorter).
grpc::ByteBuffer InPieces(const std::string& bytes, size_t piece) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    slices.emplace_back(bytes.data() + at, std::min(piece, bytes.size() - at));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

TEST(RowsRequest, PushParsesAsTheMessageWithTheRowsWrittenInPlace) {
  rpc::PushSparseRequest head;
  head.set_trainer_id(3);
  head.set_write(rpc::OVERWRITE);
  head.set_request_id(0xfeedbeef01ull);
  rpc::SparseRowsData rows_head;
  rows_head.set_table("emb");
  rows_head.set_learning_rate(0.25f);
  const std::vector<int64_t> keys{7, -1, int64_t{1} << 40};
  std::vector<float> values(keys.size() * 2);
  std::iota(values.begin(), values.end(), 0.5f);
  RowsRequest req(head, rpc::PushSparseRequest::kTablesFieldNumber, rows_head, keys.size(), 2);
  std::memcpy(req.keys(), keys.data(), keys.size() * sizeof(int64_t));
  std::memcpy(req.values(), values.data(), values.size() * sizeof(float));

  rpc::PushSparseRequest got;
  ASSERT_TRUE(got.ParseFromString(Bytes(req.buffer())));
  EXPECT_EQ(got.trainer_id(), 3);
  EXPECT_EQ(got.write(), rpc::OVERWRITE);
  EXPECT_EQ(got.request_id(), 0xfeedbeef01ull);
  ASSERT_EQ(got.tables_size(), 1);
  EXPECT_EQ(got.tables(0).table(), "emb");
  EXPECT_EQ(got.tables(0).learning_rate(), 0.25f);
  EXPECT_EQ(got.tables(0).keys(), std::string(reinterpret_cast<const char*>(keys.data()), 24));
  EXPECT_EQ(got.tables(0).values(), std::string(reinterpret_cast<const char*>(values.data()), 24));
}

TEST(RowsRequest, PullCarriesKeysOnlyAndDeltaItsOwnField) {
  rpc::PullSparseRequest pull;
  pull.set_trainer_id(1);
  rpc::SparseRowsData rows_head;
  rows_head.set_table("t");
  RowsRequest req(pull, rpc::PullSparseRequest::kTablesFieldNumber, rows_head, 1, 0);
  EXPECT_EQ(req.values(), nullptr);
  const int64_t key = 42;
  std::memcpy(req.keys(), &key, sizeof key);
  rpc::PullSparseRequest got;
  ASSERT_TRUE(got.ParseFromString(Bytes(req.buffer())));
  ASSERT_EQ(got.tables_size(), 1);
  EXPECT_EQ(got.tables(0).keys(), std::string(reinterpret_cast<const char*>(&key), 8));
  EXPECT_TRUE(got.tables(0).values().empty());

  rpc::PushDeltaRequest delta;
  delta.set_request_id(9);
  RowsRequest dreq(delta, rpc::PushDeltaRequest::kSparseFieldNumber, rows_head, 1, 1);
  std::memcpy(dreq.keys(), &key, sizeof key);
  const float one = 1.0f;
  std::memcpy(dreq.values(), &one, sizeof one);
  rpc::PushDeltaRequest got_delta;
  ASSERT_TRUE(got_delta.ParseFromString(Bytes(dreq.buffer())));
  EXPECT_EQ(got_delta.request_id(), 9u);
  ASSERT_EQ(got_delta.sparse_size(), 1);
  EXPECT_EQ(got_delta.sparse(0).values().size(), 4u);
}

// A reply of `rows` rows of `dim` floats: row r holds r * 100 + column.
std::string Reply(size_t rows, int64_t dim, int64_t dim_field, int tables = 1) {
  rpc::PullSparseResponse resp;
  for (int t = 0; t < tables; ++t) {
    auto* out = resp.add_tables();
    out->set_table("emb");
    out->set_dim(dim_field);
    std::vector<float> v(rows * dim);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i / dim * 100 + i % dim);
    out->set_values(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  }
  return resp.SerializeAsString();
}

// Reads a reply and returns its rows in the order handed over, checking
// that runs come in order and cover every row once.
std::vector<float> ReadAll(grpc::ByteBuffer reply, size_t count, int64_t& dim, size_t* runs = nullptr) {
  std::vector<float> rows;
  size_t next = 0, n = 0;
  ReadPulledRows(reply, count, "emb", "server-a", dim, [&](size_t first, const char* at, size_t k) {
    EXPECT_EQ(first, next);
    next += k;
    ++n;
    const size_t old = rows.size();
    rows.resize(old + k * dim);
    std::memcpy(rows.data() + old, at, k * dim * sizeof(float));
  });
  EXPECT_EQ(next, count);
  if (runs) *runs = n;
  return rows;
}

TEST(ReadPulledRows, RowsArriveWholeFromAnySlicing) {
  const std::string bytes = Reply(50, 3, 3);
  for (size_t piece : {size_t{1}, size_t{7}, size_t{12}, size_t{64}, bytes.size()}) {
    int64_t dim = -1;
    size_t runs = 0;
    const std::vector<float> rows = ReadAll(InPieces(bytes, piece), 50, dim, &runs);
    EXPECT_EQ(dim, 3);
    ASSERT_EQ(rows.size(), 150u) << "pieces of " << piece;
    for (size_t i = 0; i < rows.size(); ++i) {
      ASSERT_EQ(rows[i], static_cast<float>(i / 3 * 100 + i % 3)) << "pieces of " << piece;
    }
    if (piece == bytes.size()) {
      EXPECT_EQ(runs, 1u);  // one slice: one run, no copies
    }
  }
}

TEST(ReadPulledRows, MalformedRepliesThrowNamingServerAndTable) {
  auto fails = [](const std::string& bytes, size_t count, int64_t dim, const std::string& what) {
    try {
      ReadAll(InPieces(bytes, 5), count, dim);
      ADD_FAILURE() << "no error for " << what;
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(what), std::string::npos) << message;
      EXPECT_NE(message.find("emb"), std::string::npos) << message;
      EXPECT_NE(message.find("server-a"), std::string::npos) << message;
    }
  };
  fails(Reply(4, 2, 2), 5, -1, "32 bytes of rows for 5 keys");
  fails(Reply(4, 2, 3), 4, -1, "rows 2 floats wide but dim 3");
  fails(Reply(4, 2, 2, 2), 4, -1, "more than one table");
  fails(Reply(4, 2, 2, 0), 4, -1, "0 tables");
  fails(Reply(4, 2, 2), 4, 4, "dim differs across servers");
  rpc::PullSparseResponse other;
  other.add_tables()->set_table("other");
  fails(other.SerializeAsString(), 4, -1, "rows of 'other'");
  const std::string whole = Reply(4, 2, 2);
  fails(whole.substr(0, whole.size() - 9), 4, -1, "truncated rows");
}

}  // namespace
}  // namespace flotilla::ps
