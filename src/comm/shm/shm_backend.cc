#include "comm/shm/shm_backend.h"

#include <cstring>

#include "comm/reduce_kernels.h"
#include "comm/shm/shm_jobs.h"
#include "flotilla/common/enforce.h"

namespace flotilla::comm::shm {
namespace {

// Allreduces up to this size take one flag round; larger ones pipeline.
constexpr size_t kSmallBytes = 32 * 1024;
// Broadcasts and allgathers copy once, when they may, for this much per
// sender: below, the system calls cost more than the copy saves; above, the
// two-copy pipeline, which keeps both cores copying, is faster than the
// kernel's page-by-page copy (measured in docs/comm.md).
constexpr size_t kSingleCopyMin = 64 * 1024, kSingleCopyMax = 2 * 1024 * 1024;

bool SingleCopyFits(size_t bytes) { return bytes >= kSingleCopyMin && bytes < kSingleCopyMax; }

WaitOptions WaitOptionsFor(const ShmOptions& o, int size) {
  WaitOptions w;
  w.timeout = o.timeout;
  w.stall_warning_after = o.stall_warning_after;
  w.spin = o.spin.count() < 0 ? DefaultSpin(size) : o.spin;
  return w;
}

}  // namespace

ShmBackend::ShmBackend(Store& store, int rank, int size, ShmOptions options)
    : rank_(rank),
      size_(size),
      options_(options),
      caches_(CacheSizes::Detect()),
      waiter_(rank, size, WaitOptionsFor(options, size), [this](int r) {
        return int64_t(seg_->control(r).pid.value.load(std::memory_order_relaxed));
      }) {
  FLOTILLA_ENFORCE(rank >= 0 && rank < size, "shm backend: rank ", rank, " outside group of ",
                   size);
  seg_ = ShmSegment::Open(store, rank, size, caches_, options.timeout,
                          options.stall_warning_after);
  srcs_.resize(size);
  single_copy_ = size > 1 && ProbeSingleCopy();
}

ShmStats ShmBackend::stats() const {
  ShmStats s = stats_;
  s.wait = waiter_.stats();
  return s;
}

// ---- rounds ----

void ShmBackend::BeginRound() {
  ++round_;
  // Our slot half for this round was last read in round_ - 2. Every rank
  // finished that round before it posted in round_ - 1; when we saw every
  // rank's post then, there is nothing to wait for (and no cache line of a
  // peer to fetch on the latency path).
  if (round_ <= 2 || synced_round_ == round_ - 1) return;
  Await("slot reuse", round_ - 2, [&](int s) { return &seg_->control(s).finished; });
}

void ShmBackend::EndRound() { Publish(seg_->control(rank_).finished, round_); }

char* ShmBackend::Piece(int rank, size_t step, int piece, size_t chunk) const {
  return seg_->slot(rank, round_) + ((step % kDepth) * size_ + piece) * chunk;
}

void ShmBackend::AwaitRanks(const char* what, Counter RankControl::*field, uint64_t target,
                            const std::vector<char>& ranks) {
  Await(what, target,
        [&](int s) -> const Counter* { return ranks[s] ? &(seg_->control(s).*field) : nullptr; });
}

// ---- allreduce and the other reductions ----

void ShmBackend::allreduce(void* data, size_t count, DType dtype, ReduceOp op) {
  if (size_ == 1 || count == 0) return;
  const size_t es = SizeOf(dtype);
  char* p = static_cast<char*>(data);
  if (count * es <= kSmallBytes) {
    BeginRound();
    char* mine = seg_->slot(rank_, round_);
    std::memcpy(mine, p, count * es);
    const uint64_t tag = Tag(round_, 1);
    Publish(seg_->control(rank_).posted, tag);
    Await("allreduce", tag, [&](int s) { return &seg_->control(s).posted; });
    synced_round_ = round_;
    // Sources in rank order (so every rank computes the same bits, signed
    // zeros and NaNs included); our own from our buffer, which reads faster
    // than our slot while the peers read that.
    for (int s = 0; s < size_; ++s) srcs_[s] = s == rank_ ? p : seg_->slot(s, round_);
    ReduceMany({p, nullptr, srcs_.data(), size_, count, dtype, op, size_, false});
    EndRound();
    return;
  }
  ReduceJob job;
  job.what = "allreduce";
  job.in = job.out = p;
  job.dtype = dtype;
  job.op = op;
  job.esize = es;
  job.in_bytes = count * es;
  SplitRegions(job, count);
  ReducePipelined(job);
}

void ShmBackend::reduce_scatter(const void* in, void* out, size_t count, DType dtype,
                                ReduceOp op) {
  const size_t es = SizeOf(dtype);
  if (count == 0) return;
  if (size_ == 1) {
    std::memcpy(out, in, count * es);
    return;
  }
  ReduceJob job;
  job.what = "reduce_scatter";
  job.in = static_cast<const char*>(in);
  job.out = static_cast<char*>(out);
  job.dtype = dtype;
  job.op = op;
  job.esize = es;
  job.in_bytes = count * es * size_;
  for (int r = 0; r < size_; ++r) {
    job.in_off.push_back(r * count * es);
    job.out_off.push_back(0);
    job.len.push_back(count);
  }
  job.gatherer = ReduceJob::kNone;
  Reduction(job);
}

void ShmBackend::reduce(void* data, size_t count, DType dtype, ReduceOp op, int root) {
  FLOTILLA_ENFORCE(root >= 0 && root < size_, "reduce root ", root, " outside group of ", size_);
  if (size_ == 1 || count == 0) return;
  const size_t es = SizeOf(dtype);
  ReduceJob job;
  job.what = "reduce";
  job.in = job.out = static_cast<char*>(data);
  job.dtype = dtype;
  job.op = op;
  job.esize = es;
  job.in_bytes = count * es;
  SplitRegions(job, count);
  job.keep_own = rank_ == root;
  job.gatherer = root;
  Reduction(job);
}

// Region r of a `count`-element buffer, for rank r: regions start on cache
// lines, so every chunk does.
void ShmBackend::SplitRegions(ReduceJob& job, size_t count) const {
  const size_t line = kLineBytes / job.esize;
  size_t start = 0;
  for (int r = 0; r < size_; ++r) {
    size_t end = r + 1 == size_ ? count : RoundDown(count * (r + 1) / size_, line);
    end = std::max(end, start);
    job.in_off.push_back(start * job.esize);
    job.out_off.push_back(start * job.esize);
    job.len.push_back(end - start);
    start = end;
  }
}

void ShmBackend::Reduction(const ReduceJob& job) {
  if (job.in_bytes <= kSmallBytes) return ReduceSmall(job);
  ReducePipelined(job);
}

void ShmBackend::ReduceSmall(const ReduceJob& job) {
  BeginRound();
  std::memcpy(seg_->slot(rank_, round_), job.in, job.in_bytes);
  const uint64_t tag = Tag(round_, 1);
  Publish(seg_->control(rank_).posted, tag);
  Await(job.what, tag, [&](int s) { return &seg_->control(s).posted; });
  synced_round_ = round_;
  for (int r = 0; r < size_; ++r) {
    const bool needed = r == rank_ ? job.keep_own : job.Gathers(rank_);
    if (!needed || job.len[r] == 0) continue;
    for (int s = 0; s < size_; ++s) srcs_[s] = seg_->slot(s, round_) + job.in_off[r];
    ReduceMany({job.out + job.out_off[r], nullptr, srcs_.data(), size_, job.len[r], job.dtype,
                job.op, size_, false});
  }
  EndRound();
}

// ---- broadcast / allgather ----

void ShmBackend::broadcast(void* data, size_t count, DType dtype, int root) {
  FLOTILLA_ENFORCE(root >= 0 && root < size_, "broadcast root ", root, " outside group of ", size_);
  if (size_ == 1 || count == 0) return;
  SendJob job;
  job.what = "broadcast";
  job.sources.assign(size_, 0);
  job.sources[root] = 1;
  job.in = static_cast<const char*>(data);
  job.out = static_cast<char*>(data);
  job.bytes = count * SizeOf(dtype);
  job.out_off.assign(size_, 0);
  if (single_copy_ && SingleCopyFits(job.bytes)) return SendSingleCopy(job);
  SendPipelined(job);
}

void ShmBackend::allgather(const void* in, void* out, size_t count, DType dtype) {
  if (count == 0) return;
  const size_t bytes = count * SizeOf(dtype);
  if (size_ == 1) {
    std::memcpy(out, in, bytes);
    return;
  }
  SendJob job;
  job.what = "allgather";
  job.sources.assign(size_, 1);
  job.in = static_cast<const char*>(in);
  job.out = static_cast<char*>(out);
  job.bytes = bytes;
  for (int r = 0; r < size_; ++r) job.out_off.push_back(r * bytes);
  if (single_copy_ && SingleCopyFits(job.bytes)) return SendSingleCopy(job);
  SendPipelined(job);
}

// ---- barrier ----

void ShmBackend::barrier() {
  if (size_ == 1) return;
  BeginRound();
  const uint64_t tag = Tag(round_, 1);
  Publish(seg_->control(rank_).posted, tag);
  Await("barrier", tag, [&](int s) { return &seg_->control(s).posted; });
  synced_round_ = round_;
  EndRound();
}

// ---- point to point ----

void ShmBackend::send(const void* data, size_t bytes, int peer, uint32_t tag) {
  FLOTILLA_ENFORCE(peer >= 0 && peer < size_ && peer != rank_, "send to invalid peer ", peer);
  ChannelControl& ch = seg_->channel(rank_, peer);
  char* buf = seg_->channel_data(rank_, peer);
  const size_t cap = seg_->layout().channel_bytes;
  size_t off = 0;
  do {
    const uint64_t seq = ch.sent.value.load(std::memory_order_relaxed);
    Await("send", seq, [&](int s) { return s == peer ? &ch.acked : nullptr; });
    const size_t n = std::min(cap, bytes - off);
    if (n) std::memcpy(buf, static_cast<const char*>(data) + off, n);  // data may be null at 0
    ch.header.value.store((uint64_t(tag) << 32) | n, std::memory_order_relaxed);
    Publish(ch.sent, seq + 1);
    off += n;
  } while (off < bytes);
}

void ShmBackend::recv(void* data, size_t bytes, int peer, uint32_t tag) {
  FLOTILLA_ENFORCE(peer >= 0 && peer < size_ && peer != rank_, "recv from invalid peer ", peer);
  ChannelControl& ch = seg_->channel(peer, rank_);
  const char* buf = seg_->channel_data(peer, rank_);
  const size_t cap = seg_->layout().channel_bytes;
  size_t off = 0;
  do {
    const uint64_t seq = ch.acked.value.load(std::memory_order_relaxed);
    Await("recv", seq + 1, [&](int s) { return s == peer ? &ch.sent : nullptr; });
    const uint64_t header = ch.header.value.load(std::memory_order_relaxed);
    const size_t n = std::min(cap, bytes - off);
    FLOTILLA_ENFORCE(uint32_t(header >> 32) == tag && (header & 0xffffffffu) == n,
                     "recv on rank ", rank_, " from rank ", peer, ": expected tag ", tag, " and ",
                     bytes, " bytes, got tag ", uint32_t(header >> 32), " with a ",
                     (header & 0xffffffffu), "-byte chunk");
    if (n) std::memcpy(static_cast<char*>(data) + off, buf, n);
    Publish(ch.acked, seq + 1);
    off += n;
  } while (off < bytes);
}

}  // namespace flotilla::comm::shm
