#include "flotilla/ps/slicing.h"

#include <utility>

#include "flotilla/common/enforce.h"

namespace flotilla::ps {

uint64_t HashName(const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Paddle's block size: split into at most num_servers pieces of at least
// min_block_size, then round up to whole rows.
int64_t BlockSize(int64_t numel, int num_servers, int64_t row_width, int64_t min_block_size) {
  int64_t split = std::max<int64_t>(1, numel / min_block_size);
  split = std::min<int64_t>(split, num_servers);
  int64_t size = CeilDiv(numel, split);
  if (size % row_width != 0) size += row_width - size % row_width;
  return size;
}

}  // namespace

std::vector<DenseBlock> SliceDense(const std::string& name, int64_t numel, int num_servers,
                                   int64_t row_width, int64_t min_block_size) {
  FLOTILLA_ENFORCE_GE(num_servers, 1, "SliceDense('", name, "')");
  FLOTILLA_ENFORCE_GE(numel, 0, "SliceDense('", name, "')");
  FLOTILLA_ENFORCE_GE(row_width, 1, "SliceDense('", name, "')");
  FLOTILLA_ENFORCE_GE(min_block_size, 1, "SliceDense('", name, "')");
  std::vector<DenseBlock> blocks;
  if (numel == 0) return blocks;
  const int64_t size = BlockSize(numel, num_servers, row_width, min_block_size);
  const int first = static_cast<int>(HashName(name) % static_cast<uint64_t>(num_servers));
  for (int64_t offset = 0; offset < numel; offset += size) {
    DenseBlock b;
    b.id = static_cast<int>(blocks.size());
    b.server = (first + b.id) % num_servers;
    b.offset = offset;
    b.length = std::min(size, numel - offset);
    blocks.push_back(b);
  }
  return blocks;
}

int ModSlicer(int64_t key, int num_servers) {
  int64_t r = key % num_servers;
  return static_cast<int>(r < 0 ? r + num_servers : r);
}

namespace {

template <int64_t N>
void ModSliceFixed(std::span<const int64_t> keys, std::span<uint32_t> out) {
  for (size_t i = 0; i < keys.size(); ++i) {
    const int64_t r = keys[i] % N;
    out[i] = static_cast<uint32_t>(r < 0 ? r + N : r);
  }
}

template <int64_t... N>
bool ModSliceConstant(std::span<const int64_t> keys, int n, std::span<uint32_t> out,
                      std::integer_sequence<int64_t, N...>) {
  return ((n == N + 1 ? (ModSliceFixed<N + 1>(keys, out), true) : false) || ...);
}

}  // namespace

void ModSliceBatch(std::span<const int64_t> keys, int num_servers, std::span<uint32_t> out) {
  FLOTILLA_ENFORCE_GE(num_servers, 1, "ModSliceBatch num_servers");
  FLOTILLA_ENFORCE_EQ(out.size(), keys.size(), "ModSliceBatch: one output per key");
  if (ModSliceConstant(keys, num_servers, out, std::make_integer_sequence<int64_t, 16>{})) return;
  for (size_t i = 0; i < keys.size(); ++i) out[i] = static_cast<uint32_t>(ModSlicer(keys[i], num_servers));
}

int HashSlicer(int64_t key, int num_servers) {
  return static_cast<int>(MixBits(static_cast<uint64_t>(key)) % static_cast<uint64_t>(num_servers));
}

}  // namespace flotilla::ps
