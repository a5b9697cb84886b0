// Saving and loading sparse tables: one checksummed file for a memory
// table; for an ssd table a header file plus a RocksDB checkpoint of every
// row (disk and memory) beside it, so a save never needs the whole table
// in memory.
#include <filesystem>
#include <mutex>
#include <shared_mutex>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"
#include "flotilla/ps/sparse_table.h"
#include "ps/byte_io.h"
#include "ps/sparse_shard.h"
#include "ps/table_file.h"

namespace flotilla::ps {

namespace {

// Rows per database write: a few hundred KiB, well within a write buffer.
constexpr size_t kWriteBatch = 1 << 12;

std::string DbDir(const std::string& path) { return path + ".db"; }

}  // namespace

std::vector<std::unique_lock<std::mutex>> SparseTable::LockAll() const {
  std::vector<std::unique_lock<std::mutex>> locks;
  for (const auto& s : shards_) locks.emplace_back(s->mu);
  return locks;
}

// Forgets a shard's rows in memory and its disk count (the caller
// replaces the database). Callers hold the shard lock.
void SparseTable::EmptyShard(Shard& s) {
  s.slot.Clear();
  s.keys.clear();
  s.data.clear();
  s.last_use.clear();
  s.pending.clear();
  s.candidates = {};
  s.disk_rows = 0;
}

void SparseTable::SaveTo(const std::string& path) const {
  if (disk_ == nullptr) {
    WriteTableFile(path, TableKind::kSparse, Serialize());
    return;
  }
  const auto locks = LockAll();
  const std::string db = DbDir(path), tmp = db + ".tmp";
  RowDb::Destroy(tmp);
  disk_->db.Checkpoint(tmp);  // the rows on disk ...
  ByteWriter w;
  w.str() = Header();
  w.Put<uint32_t>(static_cast<uint32_t>(shards_.size()));
  {
    // ... plus the rows in memory, within the table's budget: the
    // checkpoint flushed the live write buffers, whose share this
    // database's take, and it shares the live cache.
    RowDb out(tmp, Stride(), /*fresh=*/false, disk_->memory, &disk_->db);
    for (const auto& s : shards_) {
      for (size_t first = 0; first < s->keys.size(); first += kWriteBatch) {
        const size_t n = std::min(kWriteBatch, s->keys.size() - first);
        out.Put(std::span<const int64_t>(s->keys).subspan(first, n),
                [&](size_t j) { return s->data.data() + (first + j) * Stride(); });
      }
      w.Put<int64_t>(static_cast<int64_t>(s->keys.size()) + s->disk_rows);
    }
  }
  RowDb::Destroy(db);
  std::filesystem::rename(tmp, db);
  WriteTableFile(path, TableKind::kSparseSsd, w.str());
}

void SparseTable::LoadFrom(const std::string& path) {
  const std::string what = "table file '" + path + "'";
  if (disk_ == nullptr) {
    Deserialize(ReadTableFile(path, TableKind::kSparse), what);
    return;
  }
  const std::string payload = ReadTableFile(path, TableKind::kSparseSsd);
  ByteReader r(payload, what);
  auto [step_lr, pass] = ParseHeader(r);
  const uint32_t saved_shards = r.Get<uint32_t>();
  std::vector<int64_t> per_shard;
  for (uint32_t i = 0; i < saved_shards; ++i) per_shard.push_back(r.Get<int64_t>());
  FLOTILLA_CHECK(r.done(), Corruption, what, ": trailing bytes after table '", name(), "'");
  const auto locks = LockAll();
  const std::string live = disk_->db.path();
  const RowDbMemory memory = disk_->memory;
  const size_t filter_bytes = disk_->spilled.bytes();
  disk_.reset();
  RowDb::Destroy(live);
  RowDb::Clone(DbDir(path), live);
  disk_ = std::make_unique<Disk>(live, Stride(), /*fresh=*/false, memory, filter_bytes);
  for (auto& s : shards_) EmptyShard(*s);
  int64_t rows = 0;
  disk_->db.ForEachKey([&](int64_t key) {  // every row is on disk now: count and filter them
    disk_->spilled.Add(key);
    ++shards_[ShardIndex(KeyIndex::Hash(key))]->disk_rows;
    ++rows;
  });
  int64_t saved_rows = 0;
  for (int64_t n : per_shard) saved_rows += n;
  FLOTILLA_CHECK(rows == saved_rows, Corruption, what, ": the database beside it holds ", rows,
                 " rows, the header says ", saved_rows);
  pass_ = pass;
  std::unique_lock<std::shared_mutex> lock(history_mu_);
  step_lr_ = std::move(step_lr);
  step_ = static_cast<int64_t>(step_lr_.size());
}

// Replaces every row (ssd tables): memory emptied, the database rebuilt
// from rows(put), which calls put(key, row) for each row.
void SparseTable::InstallOnDisk(
    const std::function<void(const std::function<void(int64_t, const float*)>&)>& rows) {
  const auto locks = LockAll();
  for (auto& s : shards_) EmptyShard(*s);
  const std::string live = disk_->db.path();
  const RowDbMemory memory = disk_->memory;
  const size_t filter_bytes = disk_->spilled.bytes();
  disk_.reset();
  disk_ = std::make_unique<Disk>(live, Stride(), /*fresh=*/true, memory, filter_bytes);
  std::vector<int64_t> keys;
  std::vector<float> data;
  auto flush = [&] {
    disk_->db.Put(keys, [&](size_t j) { return data.data() + j * Stride(); });
    keys.clear();
    data.clear();
  };
  rows([&](int64_t key, const float* row) {
    keys.push_back(key);
    data.insert(data.end(), row, row + Stride());
    disk_->spilled.Add(key);
    ++shards_[ShardIndex(KeyIndex::Hash(key))]->disk_rows;
    if (keys.size() == kWriteBatch) flush();
  });
  flush();
}

void SparseTable::LoadResharded(std::span<const std::string> paths,
                                const std::function<bool(int64_t)>& keep, const std::string& what) {
  if (disk_ == nullptr) {
    std::vector<std::string> images;
    for (const auto& p : paths) images.push_back(ReadTableFile(p, TableKind::kSparse));
    DeserializeResharded(images, keep, what);
    return;
  }
  InstallOnDisk([&](const std::function<void(int64_t, const float*)>& put) {
    for (size_t j = 0; j < paths.size(); ++j) {
      const std::string payload = ReadTableFile(paths[j], TableKind::kSparseSsd);
      ByteReader r(payload, StrCat(what, " (", paths[j], ")"));
      auto [step_lr, pass] = ParseHeader(r);
      pass_ = pass;  // every server shrinks at the same pass boundaries
      const int64_t steps = static_cast<int64_t>(step_lr.size());
      const std::string copy = disk_->db.path() + ".load";
      RowDb::Destroy(copy);
      RowDb::Clone(DbDir(paths[j]), copy);  // opened from a copy: the save stays as it was
      {
        RowDb saved(copy, Stride(), /*fresh=*/false);
        std::vector<float> row(Stride());
        saved.ForEach([&, &step_lr = step_lr](int64_t key, const float* data) {
          if (!keep(key)) return;
          std::copy(data, data + Stride(), row.begin());
          if (stamped_) {  // current as of its server's last step, then restamped
            const int64_t stamp = StampOf(row.data());
            if (stamp >= 0 && stamp < steps) {
              config_.rule->Advance(row.data(), row.data() + dim(), dim(),
                                    std::span<const float>(step_lr).subspan(stamp, steps - stamp));
            }
            SetStamp(row.data(), 0);
          }
          put(key, row.data());
        });
      }
      RowDb::Destroy(copy);
    }
  });
  std::unique_lock<std::shared_mutex> lock(history_mu_);
  step_lr_.clear();
  step_ = 0;
}

}  // namespace flotilla::ps
