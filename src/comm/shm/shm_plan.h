// How the shm backend cuts a collective into pipelined chunks, from the cache
// sizes this machine reports (private to shm).
//
// A large collective streams through a small ring of `depth` cells per rank:
// step j of the pipeline uses cell j % depth, so the shared memory it touches
// stays in the caches (each rank's ring fits in half its L2) and only the
// callers' buffers travel to and from DRAM. Chunks are sized so that the ring
// fits; smaller messages get smaller chunks so that they still pipeline over
// several steps.
#pragma once

#include <cstddef>

namespace flotilla::comm::shm {

// Data cache sizes in bytes (0: not reported).
struct CacheSizes {
  size_t l1d = 0;
  size_t l2 = 0;
  size_t l3 = 0;
  // Reads /sys/devices/system/cpu/cpu0/cache (falls back to sysconf, then to
  // 32 KB / 1 MB / 0).
  static CacheSizes Detect();
};

// Alignment of every slot, cell and piece: one cache line.
constexpr size_t kLineBytes = 64;
// Cells per ring.
constexpr int kDepth = 4;

// The largest chunk for `ranks` ranks: a ring of kDepth cells of `ranks`
// pieces each fills half the L2. A multiple of 4 KB in [4 KB, 256 KB].
size_t MaxChunk(const CacheSizes& caches, int ranks);

// FLOTILLA_SHM_CHUNK=<bytes> overrides MaxChunk, for measurements.
// Chunk bytes for a pipelined collective whose per-rank region is
// `region_bytes` (the bytes one rank reduces or sends): at most `max_chunk`,
// small enough for about kDepth steps, at least 16 KB (below, a step's
// synchronisation costs more than pipelining saves: 64 KB allreduces took
// 8.1-9.0 us in 4 steps, 6.9-7.5 us in 2); a multiple of 64.
size_t ChunkFor(size_t region_bytes, size_t max_chunk);

// Whether stores of a `bytes`-sized result into the caller's buffer should
// stream past the caches: only when the result does not fit the last-level
// cache (8x the L2 when no L3 is reported) and would evict itself anyway.
// FLOTILLA_SHM_STREAM=<bytes> overrides the threshold, for measurements.
bool StreamFor(size_t bytes, const CacheSizes& caches);

size_t RoundUp(size_t n, size_t to);
size_t RoundDown(size_t n, size_t to);

}  // namespace flotilla::comm::shm
