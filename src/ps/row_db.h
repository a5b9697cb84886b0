// RowDb: sparse-table rows on local disk, in a RocksDB database (Debian's
// librocksdb). Keys are the int64 ids (8 bytes), values the rows' floats.
// Used by ssd tables for the rows beyond their memory budget, and as the
// on-disk form of their saves.
//
// Writes skip RocksDB's write-ahead log: the live database is a cache of
// rows that a crash loses with the process anyway; durability comes from
// saves (Checkpoint flushes first). Thread-safe (RocksDB is); errors throw
// Unavailable naming the database path.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace rocksdb {
class DB;
class Cache;
}  // namespace rocksdb

namespace flotilla::ps {

// RocksDB's own memory: at most two write buffers of write_buffer_bytes
// and a block cache (index blocks charged to it) of cache_bytes.
struct RowDbMemory {
  size_t write_buffer_bytes = 8 << 20;
  size_t cache_bytes = 8 << 20;
  size_t total() const { return 2 * write_buffer_bytes + cache_bytes; }
};

class RowDb {
 public:
  // Opens (creating) the database at `path`; with `fresh`, whatever was
  // there is destroyed first. `row_floats` is the length of every value.
  // With `cache_of`, blocks go to that database's cache (which must outlive
  // this one), not to a cache of its own: memory.cache_bytes is unused.
  RowDb(std::string path, size_t row_floats, bool fresh, RowDbMemory memory = {},
        const RowDb* cache_of = nullptr);
  ~RowDb();
  RowDb(const RowDb&) = delete;
  RowDb& operator=(const RowDb&) = delete;

  const std::string& path() const { return path_; }

  // Looks every key up; found(i, row) is called for keys[i] found, then
  // the found keys are deleted (rows move out of the database).
  void Take(std::span<const int64_t> keys, const std::function<void(size_t, const float*)>& found);
  // Copies key's row into out (row_floats floats); false when absent.
  bool Get(int64_t key, float* out) const;
  // Deletes rows.
  void Delete(std::span<const int64_t> keys);
  // Writes rows: row(i) is keys[i]'s row of row_floats floats.
  void Put(std::span<const int64_t> keys, const std::function<const float*(size_t)>& row);
  // Calls fn(key, row) for every row, in key-byte order.
  void ForEach(const std::function<void(int64_t, const float*)>& fn) const;
  // Calls fn(key) for every row (blocks read bypass the cache).
  void ForEachKey(const std::function<void(int64_t)>& fn) const;
  // A consistent, openable copy at `dir` (must not exist): SST files hard
  // linked, the rest copied.
  void Checkpoint(const std::string& dir) const;
  // Removes the database directory at `path` (after the RowDb is gone).
  static void Destroy(const std::string& path);
  // Copies a closed database directory (a checkpoint) to `to`, which must
  // not exist: SST files hard linked (immutable), the rest copied.
  static void Clone(const std::string& from, const std::string& to);

 private:
  std::string path_;
  size_t row_bytes_;
  std::shared_ptr<rocksdb::Cache> cache_;
  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace flotilla::ps
