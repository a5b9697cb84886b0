#include "ps/row_db.h"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "flotilla/common/enforce.h"

namespace flotilla::ps {

namespace {

void Check(const rocksdb::Status& s, const std::string& path, const char* what) {
  FLOTILLA_CHECK(s.ok(), Unavailable, "sparse-table database '", path, "': ", what, ": ",
                 s.ToString());
}

std::string KeyBytes(int64_t key) {
  std::string k(sizeof key, '\0');
  std::memcpy(k.data(), &key, sizeof key);
  return k;
}

// Bounded memory (the point of the ssd class): two write buffers and one
// cache that also holds the index blocks. No bloom filters: the table's
// own KeyFilter keeps absent keys (new ids) away from the database, so the
// lookups that reach it are mostly for rows that are there.
rocksdb::Options DbOptions(const std::shared_ptr<rocksdb::Cache>& cache, const RowDbMemory& m) {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.write_buffer_size = m.write_buffer_bytes;
  o.max_write_buffer_number = 2;
  o.max_open_files = 256;
  o.compression = rocksdb::kNoCompression;  // float rows barely compress
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = cache;
  t.block_size = 8 << 10;
  t.cache_index_and_filter_blocks = true;  // counted in the cache's bound
  t.pin_l0_filter_and_index_blocks_in_cache = true;
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return o;
}

}  // namespace

RowDb::RowDb(std::string path, size_t row_floats, bool fresh, RowDbMemory memory,
             const RowDb* cache_of)
    : path_(std::move(path)), row_bytes_(row_floats * sizeof(float)),
      cache_(cache_of ? cache_of->cache_ : rocksdb::NewLRUCache(memory.cache_bytes)) {
  if (fresh) Destroy(path_);
  std::filesystem::create_directories(std::filesystem::path(path_).parent_path());
  rocksdb::DB* db = nullptr;
  Check(rocksdb::DB::Open(DbOptions(cache_, memory), path_, &db), path_, "open");
  db_.reset(db);
}

RowDb::~RowDb() = default;

void RowDb::Destroy(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

void RowDb::Clone(const std::string& from, const std::string& to) {
  namespace fs = std::filesystem;
  FLOTILLA_CHECK(fs::is_directory(from), NotFound, "sparse-table database '", from, "' is missing");
  std::error_code ec;
  fs::create_directories(to, ec);
  FLOTILLA_CHECK(!ec, Unavailable, "cannot create '", to, "': ", ec.message());
  for (const auto& entry : fs::directory_iterator(from)) {
    if (!entry.is_regular_file()) continue;
    const fs::path target = fs::path(to) / entry.path().filename();
    ec.clear();
    if (entry.path().extension() == ".sst") fs::create_hard_link(entry.path(), target, ec);
    if (entry.path().extension() != ".sst" || ec) {
      ec.clear();
      fs::copy_file(entry.path(), target, fs::copy_options::overwrite_existing, ec);
    }
    FLOTILLA_CHECK(!ec, Unavailable, "cannot copy '", entry.path().string(), "' to '",
                   target.string(), "': ", ec.message());
  }
}

void RowDb::Take(std::span<const int64_t> keys,
                 const std::function<void(size_t, const float*)>& found) {
  if (keys.empty()) return;
  const size_t n = keys.size();
  std::vector<std::string> key_bytes(n);
  std::vector<rocksdb::Slice> slices(n);
  for (size_t i = 0; i < n; ++i) {
    key_bytes[i] = KeyBytes(keys[i]);
    slices[i] = key_bytes[i];
  }
  std::vector<rocksdb::PinnableSlice> values(n);
  std::vector<rocksdb::Status> status(n);
  db_->MultiGet(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), n, slices.data(), values.data(),
                status.data());
  rocksdb::WriteBatch taken;
  for (size_t i = 0; i < n; ++i) {
    if (status[i].IsNotFound()) continue;
    Check(status[i], path_, "read");
    FLOTILLA_CHECK(values[i].size() == row_bytes_, Corruption, "sparse-table database '", path_,
                   "': row of key ", keys[i], " has ", values[i].size(), " bytes, expected ",
                   row_bytes_);
    std::vector<float> row(row_bytes_ / sizeof(float));
    std::memcpy(row.data(), values[i].data(), row_bytes_);  // aligned copy
    found(i, row.data());
    taken.Delete(slices[i]);
  }
  rocksdb::WriteOptions w;
  w.disableWAL = true;
  if (taken.Count() > 0) Check(db_->Write(w, &taken), path_, "delete");
}

bool RowDb::Get(int64_t key, float* out) const {
  std::string value;
  const rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), KeyBytes(key), &value);
  if (s.IsNotFound()) return false;
  Check(s, path_, "read");
  FLOTILLA_CHECK(value.size() == row_bytes_, Corruption, "sparse-table database '", path_,
                 "': row of key ", key, " has ", value.size(), " bytes, expected ", row_bytes_);
  std::memcpy(out, value.data(), row_bytes_);
  return true;
}

void RowDb::Delete(std::span<const int64_t> keys) {
  rocksdb::WriteBatch batch;
  for (int64_t key : keys) batch.Delete(KeyBytes(key));
  rocksdb::WriteOptions w;
  w.disableWAL = true;
  Check(db_->Write(w, &batch), path_, "delete");
}

void RowDb::Put(std::span<const int64_t> keys, const std::function<const float*(size_t)>& row) {
  rocksdb::WriteBatch batch;
  for (size_t i = 0; i < keys.size(); ++i) {
    batch.Put(KeyBytes(keys[i]),
              rocksdb::Slice(reinterpret_cast<const char*>(row(i)), row_bytes_));
  }
  rocksdb::WriteOptions w;
  w.disableWAL = true;
  Check(db_->Write(w, &batch), path_, "write");
}

void RowDb::ForEach(const std::function<void(int64_t, const float*)>& fn) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  std::vector<float> row(row_bytes_ / sizeof(float));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    FLOTILLA_CHECK(it->key().size() == sizeof(int64_t) && it->value().size() == row_bytes_,
                   Corruption, "sparse-table database '", path_, "': entry of ", it->key().size(),
                   "+", it->value().size(), " bytes, expected 8+", row_bytes_);
    int64_t key;
    std::memcpy(&key, it->key().data(), sizeof key);
    std::memcpy(row.data(), it->value().data(), row_bytes_);
    fn(key, row.data());
  }
  Check(it->status(), path_, "scan");
}

void RowDb::ForEachKey(const std::function<void(int64_t)>& fn) const {
  rocksdb::ReadOptions read;
  read.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    FLOTILLA_CHECK(it->key().size() == sizeof(int64_t), Corruption, "sparse-table database '", path_,
                   "': key of ", it->key().size(), " bytes, expected 8");
    int64_t key;
    std::memcpy(&key, it->key().data(), sizeof key);
    fn(key);
  }
  Check(it->status(), path_, "scan");
}

void RowDb::Checkpoint(const std::string& dir) const {
  rocksdb::Checkpoint* raw = nullptr;
  Check(rocksdb::Checkpoint::Create(db_.get(), &raw), path_, "checkpoint");
  std::unique_ptr<rocksdb::Checkpoint> cp(raw);
  const std::string target = std::filesystem::absolute(dir).string();
  Check(cp->CreateCheckpoint(target), path_, ("checkpoint into '" + target + "'").c_str());
}

}  // namespace flotilla::ps
