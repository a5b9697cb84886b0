// ShmSegment: the POSIX shared-memory block through which the ranks of one
// host exchange data (private to comm).
//
// Layout: per-rank control lines (pid and progress counters, each on its own
// cache line), per-pair point-to-point channel controls, then per-rank data
// slots (two halves, used by alternate rounds so a rank may start round R+1
// while slower peers still read round R), then the channel buffers. Every
// slot and buffer starts on a page boundary and has a size that is a multiple
// of the page, so any 64-byte-aligned offset in them is 64-byte aligned.
//
// Cleanup: rank 0 creates the segment and shm_unlink()s its name as soon as
// every rank has mapped it (or on any failure before), so no name outlives
// setup, whatever happens to the processes afterwards. A rank 0 killed during
// setup cannot unlink: the name carries its job (flotilla/comm/shm_cleanup.h), so the
// launcher removes it when the job ends, and any later launcher or creator
// once its owner is gone.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "comm/shm/shm_plan.h"
#include "comm/shm/shm_wait.h"
#include "flotilla/comm/store.h"

namespace flotilla::comm::shm {

struct RankControl {
  Counter pid;
  Counter posted;    // (round << 24) | pipeline steps of input published
  Counter reduced;   // (round << 24) | steps of own region reduced
  Counter gathered;  // (round << 24) | steps of peers' results copied out
  Counter finished;  // last round this rank completed
  Counter addr;      // address of the buffer this rank exposes (single copy)
  Counter probe;     // single-copy probe: 1 address set, 2 peers readable, 3 not
};

struct ChannelControl {
  Counter sent;    // chunks written by the sender
  Counter acked;   // chunks consumed by the receiver
  Counter header;  // (tag << 32) | length of the chunk in the buffer
};

struct SegmentLayout {
  int size = 0;
  size_t max_chunk = 0;      // largest pipeline chunk (see shm_plan.h)
  size_t slot_half = 0;      // bytes per rank per round: kDepth cells of size pieces
  size_t channel_bytes = 0;  // bytes per (src, dst) channel
  size_t slots_offset = 0;
  size_t channels_offset = 0;
  size_t total = 0;
  static SegmentLayout For(int size, const CacheSizes& caches);
};

class ShmSegment {
 public:
  // Rank 0 creates and publishes the segment under "shm/name" in `store`;
  // the others map it and report under "shm/attached/<rank>". Throws
  // DeadlineExceeded naming ranks that never attach, Unavailable when shared
  // memory cannot be created or mapped.
  static std::unique_ptr<ShmSegment> Open(Store& store, int rank, int size,
                                          const CacheSizes& caches,
                                          std::chrono::milliseconds timeout,
                                          std::chrono::milliseconds stall_after);
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  const SegmentLayout& layout() const { return layout_; }
  RankControl& control(int rank) const { return controls_[rank]; }
  ChannelControl& channel(int src, int dst) const {
    return channels_[src * layout_.size + dst];
  }
  // Rank `rank`'s data slot for round `round` (alternating halves).
  char* slot(int rank, uint64_t round) const {
    return base_ + layout_.slots_offset + (2 * rank + (round & 1)) * layout_.slot_half;
  }
  char* channel_data(int src, int dst) const {
    return base_ + layout_.channels_offset + (src * layout_.size + dst) * layout_.channel_bytes;
  }

 private:
  ShmSegment(SegmentLayout layout, char* base);
  static std::unique_ptr<ShmSegment> Map(int fd, const SegmentLayout& layout,
                                         const std::string& name);

  SegmentLayout layout_;
  char* base_;
  RankControl* controls_;
  ChannelControl* channels_;
};

}  // namespace flotilla::comm::shm
