// KeyIndex: int64 key → uint32 slot, for a sparse-table shard (ps) and a
// batch's distinct ids (fleet's lookup ops). Open addressing with
// linear probing over a power-of-two array, kept at most half full: a
// lookup is one mixed hash and (almost always) one cache line, several
// times cheaper than std::unordered_map's bucket-and-node chase, which
// dominated sparse pulls. Callers pass Hash(key), computed once per key:
// the table picks the shard from its high bits, the index probes from its
// low bits. Not thread-safe (a sparse shard's lock guards it).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace flotilla {

class KeyIndex {
 public:
  // A multiplicative hash between two folds: the product's high bits (the
  // shard) mix every key bit, and the folds bring high key bits into the
  // low bits the probe starts from, so ids that differ only high up
  // (slot << 48 | id) do not share a home. Independent of server placement
  // (key mod num_servers). One multiply instead of splitmix's two: a batch
  // hashes every key.
  static uint64_t Hash(int64_t key) {
    const uint64_t k = static_cast<uint64_t>(key);
    const uint64_t h = (k ^ (k >> 32)) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
  }

  // Returns the slot of `key` (whose Hash is `hash`), inserting it with
  // slot `next` when missing; the bool says whether it was inserted.
  std::pair<uint32_t, bool> FindOrInsert(int64_t key, uint64_t hash, uint32_t next) {
    if ((size_ + 1) * 2 > entries_.size()) Grow();
    size_t i = hash & (entries_.size() - 1);
    while (true) {
      Entry& e = entries_[i];
      if (e.slot == kEmpty) {
        e = {key, next};
        ++size_;
        return {next, true};
      }
      if (e.key == key) return {e.slot, false};
      i = (i + 1) & (entries_.size() - 1);
    }
  }
  std::pair<uint32_t, bool> FindOrInsert(int64_t key, uint32_t next) {
    return FindOrInsert(key, Hash(key), next);
  }
  // The slot of `key` (whose Hash is `hash`), or -1 when it is absent.
  int64_t Find(int64_t key) const { return Find(key, Hash(key)); }
  int64_t Find(int64_t key, uint64_t hash) const {
    if (entries_.empty()) return -1;
    for (size_t i = hash & (entries_.size() - 1);; i = (i + 1) & (entries_.size() - 1)) {
      const Entry& e = entries_[i];
      if (e.slot == kEmpty) return -1;
      if (e.key == key) return e.slot;
    }
  }
  // Makes room for n keys without growing (no doubling spike later).
  void Reserve(size_t n) {
    size_t capacity = 64;
    while (capacity < 2 * n) capacity *= 2;
    if (capacity <= entries_.size()) return;
    std::vector<Entry> old = std::move(entries_);
    entries_.assign(capacity, Entry{});
    size_ = 0;
    for (const Entry& e : old) {
      if (e.slot != kEmpty) FindOrInsert(e.key, e.slot);
    }
  }
  // Forgets every key, keeping the capacity.
  void Clear() {
    std::fill(entries_.begin(), entries_.end(), Entry{});
    size_ = 0;
  }
  // Hints the cache to load the line a key of this hash probes first:
  // batches prefetch keys ahead so lookups overlap their memory latency.
  void Prefetch(uint64_t hash) const {
    if (!entries_.empty()) __builtin_prefetch(&entries_[hash & (entries_.size() - 1)]);
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Entry {
    int64_t key = 0;
    uint32_t slot = kEmpty;
  };

  void Grow() { Reserve(entries_.empty() ? 32 : entries_.size()); }

  std::vector<Entry> entries_;
  size_t size_ = 0;
};

}  // namespace flotilla
