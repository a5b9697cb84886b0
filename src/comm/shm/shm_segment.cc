#include "comm/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <algorithm>

#include "comm/rendezvous.h"
#include "comm/shm/shm_names.h"
#include "flotilla/common/enforce.h"

namespace flotilla::comm::shm {
namespace {

constexpr size_t kPage = 4096;

// Removes the segment's name when setup ends, however it ends.
struct Unlinker {
  std::string name;
  ~Unlinker() { ::shm_unlink(name.c_str()); }
};

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

SegmentLayout SegmentLayout::For(int size, const CacheSizes& caches) {
  SegmentLayout l;
  l.size = size;
  // The ring of a pipelined collective (kDepth cells of one piece per rank)
  // fits a half; whole small messages (one flag round) do too.
  l.max_chunk = MaxChunk(caches, size);
  l.slot_half = RoundUp(std::max<size_t>(64 * 1024, kDepth * size * l.max_chunk), kPage);
  l.channel_bytes = 256 * 1024;
  size_t controls = RoundUp(sizeof(RankControl) * size + sizeof(ChannelControl) * size * size,
                            kPage);
  l.slots_offset = controls;
  l.channels_offset = l.slots_offset + 2 * size * l.slot_half;
  l.total = l.channels_offset + size_t(size) * size * l.channel_bytes;
  return l;
}

ShmSegment::ShmSegment(SegmentLayout layout, char* base)
    : layout_(layout),
      base_(base),
      controls_(reinterpret_cast<RankControl*>(base)),
      channels_(reinterpret_cast<ChannelControl*>(base + sizeof(RankControl) * layout.size)) {}

ShmSegment::~ShmSegment() { ::munmap(base_, layout_.total); }

std::unique_ptr<ShmSegment> ShmSegment::Map(int fd, const SegmentLayout& layout,
                                            const std::string& name) {
  void* p = ::mmap(nullptr, layout.total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  FLOTILLA_CHECK(p != MAP_FAILED, Unavailable, "cannot map shared memory ", name, " (",
                 layout.total, " bytes): ", std::strerror(errno));
  return std::unique_ptr<ShmSegment>(new ShmSegment(layout, static_cast<char*>(p)));
}

std::unique_ptr<ShmSegment> ShmSegment::Open(Store& store, int rank, int size,
                                             const CacheSizes& caches,
                                             std::chrono::milliseconds timeout,
                                             std::chrono::milliseconds stall_after) {
  SegmentLayout layout = SegmentLayout::For(size, caches);
  std::vector<std::string> attached(size);
  for (int r = 1; r < size; ++r) attached[r] = "shm/attached/" + std::to_string(r);
  if (rank == 0) {
    RemoveStaleSegments();
    std::string name = NewSegmentName();
    FdCloser fd{::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600)};
    FLOTILLA_CHECK(fd.fd >= 0, Unavailable, "cannot create shared memory ", name, ": ",
                   std::strerror(errno));
    Unlinker unlink{name};
    FLOTILLA_CHECK(::ftruncate(fd.fd, layout.total) == 0, Unavailable, "cannot size shared memory ",
                   name, " to ", layout.total, " bytes: ", std::strerror(errno));
    auto seg = Map(fd.fd, layout, name);
    seg->control(0).pid.value.store(::getpid());
    store.setString("shm/name", name);
    WaitForRanks(store, attached, "shared-memory segment " + name, timeout, stall_after);
    return seg;
  }
  WaitForRanks(store, {"shm/name"}, "shared-memory segment of rank 0", timeout, stall_after);
  std::string name = store.getString("shm/name");
  FdCloser fd{::shm_open(name.c_str(), O_RDWR, 0600)};
  FLOTILLA_CHECK(fd.fd >= 0, Unavailable, "cannot open shared memory ", name,
                 " made by rank 0: ", std::strerror(errno));
  struct stat st {};
  ::fstat(fd.fd, &st);
  FLOTILLA_CHECK(size_t(st.st_size) == layout.total, Unavailable, "shared memory ", name, " has ",
                 st.st_size, " bytes, expected ", layout.total, " (group size mismatch?)");
  auto seg = Map(fd.fd, layout, name);
  seg->control(rank).pid.value.store(::getpid());
  store.setString(attached[rank], "1");
  return seg;
}

}  // namespace flotilla::comm::shm
