// Where parameters live: dense parameters are cut into blocks spread over the
// servers, sparse rows are placed by key. Trainers and servers call the same
// pure functions, so both sides agree on placement without talking.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace flotilla::ps {

// Paddle's default: no block smaller than 8192 elements, so small
// parameters stay whole on one server.
inline constexpr int64_t kMinBlockSize = 8192;

// One contiguous piece [offset, offset + length) of a flattened parameter.
struct DenseBlock {
  int id = 0;          // 0..num_blocks-1, in offset order
  int server = 0;      // index into the server endpoint list
  int64_t offset = 0;  // in elements
  int64_t length = 0;  // in elements
  bool operator==(const DenseBlock&) const = default;
};

// Paddle's slice_variable: at most num_servers blocks, none smaller than
// min_block_size (unless the whole parameter is), each a multiple of
// row_width (the product of dims[1:]) so rows never straddle blocks. Blocks
// go round-robin over the servers starting at a server picked from a hash of
// `name`, which spreads many small parameters evenly. numel 0 gives no blocks.
// Throws InvalidArgument for num_servers < 1, negative sizes or row_width < 1.
std::vector<DenseBlock> SliceDense(const std::string& name, int64_t numel, int num_servers,
                                   int64_t row_width = 1, int64_t min_block_size = kMinBlockSize);

// Picks the server of a sparse key; must return a value in [0, num_servers).
using SparseSlicer = std::function<int(int64_t key, int num_servers)>;

// key mod num_servers (non-negative for negative keys): Paddle's placement.
int ModSlicer(int64_t key, int num_servers);
// ModSlicer over a batch: out[i] = ModSlicer(keys[i], num_servers). Server
// counts up to 16 divide by a compile-time constant (a multiply, not a
// 64-bit division), which makes routing a large batch several times faster.
void ModSliceBatch(std::span<const int64_t> keys, int num_servers, std::span<uint32_t> out);
// A mixed hash of the key mod num_servers: spreads keys that share a stride.
int HashSlicer(int64_t key, int num_servers);

// 64-bit mixer (splitmix64 finaliser), used for hashing keys and seeds.
// Inline: sparse batches call it several times per key.
inline uint64_t MixBits(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
// FNV-1a of a string.
uint64_t HashName(const std::string& name);

}  // namespace flotilla::ps
