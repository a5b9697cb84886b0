// The pipelined collectives of ShmBackend (see shm_backend.h): the reduce
// family (copy-in, reduce, gather) and the send family (copy-in, copy-out).
//
// Step j uses cell j % kDepth of each rank's ring. Before a rank overwrites a
// cell it waits until the cell's readers of step j - kDepth are done with it;
// the lag between the stages (copy-in j, reduce j-1, gather j-2) leaves them
// time, so those waits rarely block.
#include <chrono>

#include "comm/reduce_kernels.h"
#include "comm/shm/shm_backend.h"
#include "comm/shm/shm_jobs.h"
#include "flotilla/common/enforce.h"

namespace flotilla::comm::shm {
namespace {

// Elapsed nanoseconds of `f` added to `acc` when `on`.
template <typename F>
void Timed(bool on, uint64_t& acc, const F& f) {
  if (!on) return f();
  const auto t0 = std::chrono::steady_clock::now();
  f();
  acc += uint64_t(std::chrono::nanoseconds(std::chrono::steady_clock::now() - t0).count());
}

// Progress counters hold the step in their low 24 bits.
void EnforceSteps(const char* what, size_t steps, size_t bytes) {
  FLOTILLA_ENFORCE(steps + 2 < (size_t(1) << 24), "shm ", what, ": ", bytes,
                   " bytes in one call is more than the pipeline counts (", steps, " steps)");
}

}  // namespace

// ---- reductions ----

void ShmBackend::ReducePipelined(const ReduceJob& job_in) {
  ReduceJob job = job_in;
  size_t longest = 0;
  for (size_t len : job.len) longest = std::max(longest, len);
  const size_t chunk = ChunkFor(longest * job.esize, seg_->layout().max_chunk);
  job.chunk_elems = chunk / job.esize;
  job.steps = (longest + job.chunk_elems - 1) / job.chunk_elems;
  EnforceSteps(job.what, job.steps, job.in_bytes);
  job.stream = StreamFor(job.in_bytes, caches_);
  job.peers.assign(size_, 1);
  job.peers[rank_] = 0;
  job.gatherers.assign(size_, 0);
  for (int g = 0; g < size_; ++g) job.gatherers[g] = g != rank_ && job.Gathers(g);
  BeginRound();
  for (size_t i = 0; i < job.steps + 2; ++i) {
    if (i < job.steps) CopyIn(job, i);
    if (i >= 1 && i <= job.steps) ReduceStep(job, i - 1);
    if (i >= 2 && job.Gathers(rank_)) GatherStep(job, i - 2);
  }
  stats_.steps += job.steps;
  // Reducing our (non-empty) region waited for every rank's posts.
  if (job.len[rank_] > 0) synced_round_ = round_;
  EndRound();
}

void ShmBackend::CopyIn(const ReduceJob& job, size_t i) {
  const size_t chunk = job.chunk_elems * job.esize;
  if (i >= kDepth) {
    // Owners have reduced step i - kDepth out of the cell we reuse.
    AwaitRanks(job.what, &RankControl::reduced, Tag(round_, i - kDepth + 1), job.peers);
  }
  Timed(options_.time_phases, stats_.copy_in_ns, [&] {
    for (int r = 0; r < size_; ++r) {
      auto [a, b] = job.Range(r, i);
      if (r == rank_ || a == b) continue;
      CopyBytes(Piece(rank_, i, r, chunk), job.in + job.in_off[r] + a * job.esize,
                (b - a) * job.esize, false);
    }
  });
  Publish(seg_->control(rank_).posted, Tag(round_, i + 1));
}

void ShmBackend::ReduceStep(const ReduceJob& job, size_t j) {
  const size_t chunk = job.chunk_elems * job.esize;
  auto [a, b] = job.Range(rank_, j);
  if (a < b) {
    AwaitRanks(job.what, &RankControl::posted, Tag(round_, j + 1), job.peers);
    const bool share = job.Shares(rank_, size_);
    if (share && j >= kDepth) {
      // Gatherers have copied step j - kDepth's result out of our cell.
      AwaitRanks(job.what, &RankControl::gathered, Tag(round_, j - kDepth + 1), job.gatherers);
    }
    const size_t off = a * job.esize;
    for (int s = 0; s < size_; ++s) {
      srcs_[s] = s == rank_ ? job.in + job.in_off[rank_] + off : Piece(s, j, rank_, chunk);
    }
    char* slot = Piece(rank_, j, rank_, chunk);
    ReduceArgs args{job.keep_own ? job.out + job.out_off[rank_] + off : slot,
                    job.keep_own && share ? slot : nullptr,
                    srcs_.data(),
                    size_,
                    b - a,
                    job.dtype,
                    job.op,
                    size_,
                    job.stream && job.keep_own};
    Timed(options_.time_phases, stats_.reduce_ns, [&] { ReduceMany(args); });
  }
  Publish(seg_->control(rank_).reduced, Tag(round_, j + 1));
}

void ShmBackend::GatherStep(const ReduceJob& job, size_t j) {
  const size_t chunk = job.chunk_elems * job.esize;
  for (int r = 0; r < size_; ++r) {
    auto [a, b] = job.Range(r, j);
    if (r == rank_ || a == b) continue;
    Await(job.what, Tag(round_, j + 1),
          [&](int s) { return s == r ? &seg_->control(s).reduced : nullptr; });
    Timed(options_.time_phases, stats_.copy_out_ns, [&, a = a, b = b] {
      CopyBytes(job.out + job.out_off[r] + a * job.esize, Piece(r, j, r, chunk),
                (b - a) * job.esize, job.stream);
    });
  }
  Publish(seg_->control(rank_).gathered, Tag(round_, j + 1));
}

// ---- broadcast / allgather ----

void ShmBackend::SendPipelined(const SendJob& job_in) {
  SendJob job = job_in;
  const size_t cell = seg_->layout().slot_half / kDepth;
  job.chunk = ChunkFor(job.bytes, cell);
  job.steps = (job.bytes + job.chunk - 1) / job.chunk;
  EnforceSteps(job.what, job.steps, job.bytes);
  job.stream = StreamFor(job.bytes * size_t(size_), caches_);
  const bool source = job.sources[rank_];
  bool receives = false;
  for (int s = 0; s < size_; ++s) receives |= s != rank_ && job.sources[s];
  job.peers.assign(size_, 1);
  job.peers[rank_] = 0;
  BeginRound();
  for (size_t i = 0; i < job.steps + 1; ++i) {
    if (source && i < job.steps) {
      auto [a, b] = job.Range(i);
      if (i >= kDepth) {
        AwaitRanks(job.what, &RankControl::gathered, Tag(round_, i - kDepth + 1), job.peers);
      }
      char* to = seg_->slot(rank_, round_) + (i % kDepth) * cell;
      Timed(options_.time_phases, stats_.copy_in_ns,
            [&, a = a, b = b] { CopyBytes(to, job.in + a, b - a, false); });
      Publish(seg_->control(rank_).posted, Tag(round_, i + 1));
      if (job.in != job.out + job.out_off[rank_]) {
        CopyBytes(job.out + job.out_off[rank_] + a, job.in + a, b - a, job.stream);
      }
    }
    if (i == 0 || !receives) continue;
    const size_t j = i - 1;
    auto [a, b] = job.Range(j);
    for (int s = 0; s < size_; ++s) {
      if (s == rank_ || !job.sources[s]) continue;
      Await(job.what, Tag(round_, j + 1),
            [&](int t) { return t == s ? &seg_->control(t).posted : nullptr; });
      const char* from = seg_->slot(s, round_) + (j % kDepth) * cell;
      Timed(options_.time_phases, stats_.copy_out_ns,
            [&, a = a, b = b] { CopyBytes(job.out + job.out_off[s] + a, from, b - a, job.stream); });
    }
    Publish(seg_->control(rank_).gathered, Tag(round_, j + 1));
  }
  stats_.steps += job.steps;
  EndRound();
}

}  // namespace flotilla::comm::shm
