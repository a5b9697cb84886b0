// ShmBackend: collectives among the ranks of one host through a shared
// memory segment; no sockets once set up.
//
// Allreduce of a large buffer runs in rounds of up to one slot half. In a
// round each rank owns one region of the buffer. Chunk by chunk (256 KB) it
// copies the regions other ranks own into its slot and publishes a counter;
// it reduces its own region straight from its input and the peers' slots,
// and the peers copy the result out of its slot. Copy-in, reduce and gather
// of successive chunks are pipelined, so every core streams memory at once
// and each byte is copied into shared memory once. Small buffers take one
// flag round instead: everyone posts its whole input and reduces all slots
// in rank order (so every rank gets bit-identical results).
//
// Waiting spins briefly, then yields, then sleeps in short naps; while
// waiting it checks the deadline and whether the awaited ranks' processes
// are still alive, so a dead peer fails the call within milliseconds.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "comm/shm/shm_segment.h"
#include "flotilla/comm/backend.h"
#include "flotilla/comm/store.h"

namespace flotilla::comm::shm {

struct ShmOptions {
  std::chrono::milliseconds timeout = Store::kDefaultTimeout;
  std::chrono::milliseconds stall_warning_after = std::chrono::seconds(60);
};

class ShmBackend : public Backend {
 public:
  // Blocks until every rank has mapped the segment (see ShmSegment::Open).
  ShmBackend(Store& store, int rank, int size, ShmOptions options);

  std::string name() const override { return "shm"; }
  void allreduce(void* data, size_t count, DType dtype, ReduceOp op) override;
  void broadcast(void* data, size_t count, DType dtype, int root) override;
  void allgather(const void* in, void* out, size_t count, DType dtype) override;
  void reduce_scatter(const void* in, void* out, size_t count, DType dtype, ReduceOp op) override;
  void reduce(void* data, size_t count, DType dtype, ReduceOp op, int root) override;
  void barrier() override;
  void send(const void* data, size_t bytes, int peer, uint32_t tag) override;
  void recv(void* data, size_t bytes, int peer, uint32_t tag) override;

 private:
  struct Region;
  void AllreduceSmall(char* data, size_t count, DType dtype, ReduceOp op);
  void AllreduceRound(char* data, size_t count, DType dtype, ReduceOp op);
  void ReduceChunk(char* data, const Region& rg, size_t j, DType dtype, ReduceOp op);
  void GatherChunk(char* data, const Region& rg, size_t j);
  void BroadcastRound(char* data, size_t bytes, int root);
  void AllgatherRound(const char* in, char* out, size_t bytes, size_t stride);

  void BeginRound();
  void EndRound();
  static uint64_t Tag(uint64_t round, uint64_t k) { return (round << 24) | k; }
  // Blocks until ready(r) holds for every rank r; see the class comment.
  // The first check is inline and allocation-free: the latency path.
  template <typename Ready>
  void Await(const char* what, const Ready& ready) {
    for (int s = 0; s < size_; ++s) {
      if (!ready(s)) return AwaitSlow(what, std::function<bool(int)>(ready));
    }
  }
  void AwaitSlow(const char* what, const std::function<bool(int)>& ready);
  std::vector<int> NotReady(const std::function<bool(int)>& ready) const;

  int rank_;
  int size_;
  ShmOptions options_;
  std::unique_ptr<ShmSegment> seg_;
  uint64_t round_ = 0;
  // Last round in which this rank saw every rank's post.
  uint64_t synced_round_ = 0;
};

}  // namespace flotilla::comm::shm
