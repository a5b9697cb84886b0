// ShmBackend: collectives among the ranks of one host through a shared
// memory segment; no sockets once set up.
//
// Small messages (up to one slot half) take one flag round: every rank posts
// its whole input in its slot, raises a flag, and reads the others' slots.
//
// Large reductions (allreduce, reduce_scatter, reduce) are a pipelined
// reduce-scatter (+ gather): rank r owns region r of the buffer. Step j of
// the pipeline moves chunk j of every region: each rank copies its input for
// the regions others own into a cell of its ring (copy-in); each owner reduces
// its chunk from its own input and the peers' cells in rank order, writing the
// result into its buffer and, when others need it, into its cell (reduce);
// the others copy it out (gather). Copy-in, reduce and gather of successive
// steps overlap, every core streams memory at once, and the rings are small
// enough to stay in the caches (see shm_plan.h), so only the callers' buffers
// travel to and from DRAM. Broadcast and allgather are the same pipeline
// without the reduce: sources copy chunks into their rings, receivers copy
// them out.
//
// Broadcast and allgather of 64 KB to 2 MB per sender copy once instead, when
// the kernel lets the ranks read each other's memory (peer_memory.h): each
// receiver reads the sender's buffer straight into its own, and the sender
// returns once every receiver is done with it.
//
// Every rank computes every element in the same order, so results are
// bit-identical on every rank. Waiting spins briefly, then parks on a futex
// (shm_wait.h); a dead peer fails the call within milliseconds, naming it.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "comm/shm/shm_segment.h"
#include "comm/shm/shm_wait.h"
#include "flotilla/comm/backend.h"
#include "flotilla/comm/store.h"

namespace flotilla::comm::shm {

struct ShmOptions {
  std::chrono::milliseconds timeout = Store::kDefaultTimeout;
  std::chrono::milliseconds stall_warning_after = std::chrono::seconds(60);
  // Spin before parking; negative: DefaultSpin(size).
  std::chrono::microseconds spin{-1};
  // Time copy-in, reduce and copy-out (a clock read per step; for benches).
  bool time_phases = false;
  // Let broadcast and allgather read peers' buffers directly (Linux
  // cross-memory attach) when every rank may; FLOTILLA_SHM_SINGLE_COPY=0
  // turns it off too.
  bool single_copy = true;
};

// What the calls did, summed over this backend's life.
struct ShmStats {
  WaitStats wait;
  uint64_t steps = 0;        // pipeline steps run
  uint64_t copy_in_ns = 0;   // copying inputs into the ring
  uint64_t reduce_ns = 0;    // reducing (own region)
  uint64_t copy_out_ns = 0;  // copying results / received data out
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

  ShmStats stats() const;
  // Whether broadcast and allgather may read peers' buffers directly.
  bool single_copy() const { return single_copy_; }
  const CacheSizes& caches() const { return caches_; }
  const SegmentLayout& layout() const { return seg_->layout(); }

 private:
  struct ReduceJob;
  struct SendJob;
  // One flag round of a reduction whose input fits a slot half.
  void ReduceSmall(const ReduceJob& job);
  void ReducePipelined(const ReduceJob& job);
  void CopyIn(const ReduceJob& job, size_t step);
  void ReduceStep(const ReduceJob& job, size_t step);
  void GatherStep(const ReduceJob& job, size_t step);
  void SendPipelined(const SendJob& job);
  // Single copy (peer_memory.h): whether every rank can read every other's
  // memory; then the reads themselves.
  bool ProbeSingleCopy();
  void SendSingleCopy(const SendJob& job);
  void ReadFrom(int rank, char* to, size_t bytes);
  void Reduction(const ReduceJob& job);
  void SplitRegions(ReduceJob& job, size_t count) const;

  void BeginRound();
  void EndRound();
  static uint64_t Tag(uint64_t round, uint64_t k) { return (round << 24) | k; }
  char* Piece(int rank, size_t step, int piece, size_t chunk) const;
  template <typename CounterOf>
  void Await(const char* what, uint64_t target, const CounterOf& counter_of) {
    waiter_.Await(what, target, counter_of);
  }
  template <typename CounterOf>
  void Await(const char* what, uint64_t target, const CounterOf& counter_of,
             std::chrono::microseconds spin) {
    waiter_.Await(what, target, counter_of, spin);
  }
  // How long to spin for a peer's single copy of `bytes` before parking.
  std::chrono::microseconds CopySpin(size_t bytes) const;
  // Waits for `field` of every rank in `ranks` to reach `target`.
  void AwaitRanks(const char* what, Counter RankControl::*field, uint64_t target,
                  const std::vector<char>& ranks);

  int rank_;
  int size_;
  ShmOptions options_;
  CacheSizes caches_;
  std::unique_ptr<ShmSegment> seg_;
  Waiter waiter_;
  ShmStats stats_;
  std::vector<const void*> srcs_;  // scratch: one source per rank
  bool single_copy_ = false;
  uint64_t probe_word_ = 0;  // read by peers while probing single copy
  uint64_t round_ = 0;
  // Last round in which this rank saw every rank's post.
  uint64_t synced_round_ = 0;
};

}  // namespace flotilla::comm::shm
