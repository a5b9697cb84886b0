// KeyFilter: a Bloom filter over int64 keys, for an ssd table's rows on
// disk. Every spilled key is added; a key the filter has never seen is not
// on disk, so new ids (most misses while a table grows) skip the database
// lookup. Keys are never removed: a row moved back to memory or dropped
// still answers "maybe", which costs one lookup, never a wrong answer.
// Thread-safe (bits set with atomic or, read relaxed): shards add and test
// concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "flotilla/core/key_index.h"
#include "flotilla/ps/slicing.h"

namespace flotilla::ps {

class KeyFilter {
 public:
  // A filter of about `bytes` bytes (at least 64; rounded down to a power
  // of two words), testing kProbes bits per key.
  explicit KeyFilter(size_t bytes) {
    size_t words = 8;
    while (words * 2 * sizeof(uint64_t) <= bytes) words *= 2;
    mask_ = words * 64 - 1;
    bits_ = std::make_unique<std::atomic<uint64_t>[]>(words);
  }

  void Add(int64_t key) {
    uint64_t h1, h2;
    Hashes(key, &h1, &h2);
    for (int i = 0; i < kProbes; ++i) {
      const uint64_t bit = (h1 + i * h2) & mask_;
      bits_[bit >> 6].fetch_or(uint64_t{1} << (bit & 63), std::memory_order_relaxed);
    }
  }
  // False: the key was never added.
  bool MayContain(int64_t key) const {
    uint64_t h1, h2;
    Hashes(key, &h1, &h2);
    for (int i = 0; i < kProbes; ++i) {
      const uint64_t bit = (h1 + i * h2) & mask_;
      if ((bits_[bit >> 6].load(std::memory_order_relaxed) & (uint64_t{1} << (bit & 63))) == 0) return false;
    }
    return true;
  }
  size_t bytes() const { return (mask_ + 1) / 8; }

 private:
  static constexpr int kProbes = 6;  // ~1.5 % false positives at 9 bits per key
  // Two independent hashes for double hashing (Kirsch-Mitzenmacher).
  static void Hashes(int64_t key, uint64_t* h1, uint64_t* h2) {
    *h1 = KeyIndex::Hash(key);
    *h2 = MixBits(*h1 ^ 0x5851F42D4C957F2Dull) | 1;
  }

  uint64_t mask_ = 0;
  std::unique_ptr<std::atomic<uint64_t>[]> bits_;
};

}  // namespace flotilla::ps
