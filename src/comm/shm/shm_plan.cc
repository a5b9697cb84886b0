#include "comm/shm/shm_plan.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

#include "flotilla/common/env.h"
#include "flotilla/common/strings.h"

namespace flotilla::comm::shm {
namespace {

constexpr size_t kKB = 1024;

// "48K" / "2048K" / "1M" -> bytes; 0 when unreadable.
size_t ParseSize(const std::string& s) {
  if (s.empty()) return 0;
  size_t n = std::strtoull(s.c_str(), nullptr, 10);
  switch (s.back()) {
    case 'K': return n * kKB;
    case 'M': return n * kKB * kKB;
    case 'G': return n * kKB * kKB * kKB;
    default: return n;
  }
}

std::string ReadWord(const std::string& path) {
  std::ifstream in(path);
  std::string w;
  in >> w;
  return w;
}

size_t FromSysconf(int name) {
  long v = ::sysconf(name);
  return v > 0 ? size_t(v) : 0;
}

}  // namespace

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }
size_t RoundDown(size_t n, size_t to) { return n / to * to; }

CacheSizes CacheSizes::Detect() {
  CacheSizes c;
  const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index";
  for (int i = 0; i < 8; ++i) {
    const std::string d = dir + std::to_string(i) + "/";
    const std::string type = ReadWord(d + "type");
    if (type.empty()) break;
    if (type == "Instruction") continue;
    const size_t size = ParseSize(ReadWord(d + "size"));
    switch (std::atoi(ReadWord(d + "level").c_str())) {
      case 1: c.l1d = size; break;
      case 2: c.l2 = size; break;
      case 3: c.l3 = size; break;
    }
  }
  if (!c.l1d) c.l1d = FromSysconf(_SC_LEVEL1_DCACHE_SIZE);
  if (!c.l2) c.l2 = FromSysconf(_SC_LEVEL2_CACHE_SIZE);
  if (!c.l3) c.l3 = FromSysconf(_SC_LEVEL3_CACHE_SIZE);
  if (!c.l1d) c.l1d = 32 * kKB;
  if (!c.l2) c.l2 = 1024 * kKB;
  return c;
}

size_t MaxChunk(const CacheSizes& caches, int ranks) {
  if (env::Get("FLOTILLA_SHM_CHUNK")) {
    return RoundUp(env::GetIntInRange("FLOTILLA_SHM_CHUNK", 0, int64_t{4} << 10, int64_t{64} << 20), 4 * kKB);
  }
  const size_t fit = caches.l2 / 2 / (size_t(kDepth) * size_t(std::max(ranks, 1)));
  return std::clamp(RoundDown(fit, 4 * kKB), 4 * kKB, 256 * kKB);
}

size_t ChunkFor(size_t region_bytes, size_t max_chunk) {
  const size_t want = RoundUp(region_bytes / kDepth + 1, kLineBytes);
  return std::min(max_chunk, std::max(want, 16 * kKB));
}

bool StreamFor(size_t bytes, const CacheSizes& caches) {
  if (env::Get("FLOTILLA_SHM_STREAM")) {
    return bytes >= size_t(env::GetIntInRange("FLOTILLA_SHM_STREAM", 0, 0, INT64_MAX));
  }
  // Measured (docs/comm.md): streaming stores lose while the buffer fits the
  // last-level cache, since the next call reads it back from there.
  return bytes >= (caches.l3 ? caches.l3 : 8 * caches.l2);
}

}  // namespace flotilla::comm::shm
