#include "comm/shm/shm_backend.h"

#include <sched.h>
#include <time.h>

#include <cstring>
#include <vector>

#include "comm/derived_ops.h"
#include "comm/reduce_kernels.h"
#include "comm/rendezvous.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/logging.h"

namespace flotilla::comm::shm {

using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kChunkBytes = 256 * 1024;
constexpr size_t kSmallBytes = 32 * 1024;
constexpr int kSpinIterations = 4000;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

// The chunks of one round: region t spans elements [start(t), start(t+1)).
struct ShmBackend::Region {
  size_t count, n, esize, chunk_elems, chunks;
  size_t start(size_t t) const { return count * t / n; }
  // Element range of chunk j of region t (possibly empty).
  std::pair<size_t, size_t> range(size_t t, size_t j) const {
    size_t a = std::min(start(t) + j * chunk_elems, start(t + 1));
    size_t b = std::min(a + chunk_elems, start(t + 1));
    return {a, b};
  }
};

ShmBackend::ShmBackend(Store& store, int rank, int size, ShmOptions options)
    : rank_(rank), size_(size), options_(options) {
  FLOTILLA_ENFORCE(rank >= 0 && rank < size, "shm backend: rank ", rank, " outside group of ",
                   size);
  seg_ = ShmSegment::Open(store, rank, size, options.timeout, options.stall_warning_after);
}

// ---- waiting ----

std::vector<int> ShmBackend::NotReady(const std::function<bool(int)>& ready) const {
  std::vector<int> missing;
  for (int s = 0; s < size_; ++s) {
    if (!ready(s)) missing.push_back(s);
  }
  return missing;
}

void ShmBackend::AwaitSlow(const char* what, const std::function<bool(int)>& ready) {
  auto start = Clock::now();
  auto deadline = start + options_.timeout;
  auto next_check = start + std::chrono::milliseconds(20);
  bool warned = false;
  for (uint64_t iter = 0;; ++iter) {
    bool all = true;
    for (int s = 0; s < size_ && all; ++s) all = ready(s);
    if (all) return;
    if (iter < kSpinIterations) {
      CpuRelax();
      continue;
    }
    auto now = Clock::now();
    if (now - start < std::chrono::milliseconds(2)) {
      sched_yield();
    } else {
      timespec nap{0, 50 * 1000};
      nanosleep(&nap, nullptr);
    }
    if (now < next_check) continue;
    next_check = now + std::chrono::milliseconds(20);
    std::vector<int> missing = NotReady(ready);
    for (int s : missing) {
      int64_t pid = seg_->control(s).pid.value.load(std::memory_order_relaxed);
      FLOTILLA_CHECK(!ProcessIsDead(pid), Unavailable, "shm ", what, " on rank ", rank_, ": rank ",
                     s, " (pid ", pid, ") died");
    }
    FLOTILLA_CHECK(now < deadline, DeadlineExceeded, "shm ", what, " on rank ", rank_, ": ranks ",
                   RankList(missing), " did not arrive within ", options_.timeout.count(), "ms");
    if (!warned && now - start >= options_.stall_warning_after) {
      warned = true;
      log::Warn("shm {} on rank {}: still waiting for ranks {}", what, rank_, RankList(missing));
    }
  }
}

void ShmBackend::BeginRound() {
  ++round_;
  // Our slot half for this round was last read in round_ - 2. Every rank
  // finished that round before it posted in round_ - 1; when we saw every
  // rank's post then, there is nothing to wait for (and no cache line of a
  // peer to fetch on the latency path).
  if (round_ <= 2 || synced_round_ == round_ - 1) return;
  const uint64_t need = round_ - 2;
  Await("slot reuse", [&](int s) {
    return seg_->control(s).finished.value.load(std::memory_order_acquire) >= need;
  });
}

void ShmBackend::EndRound() {
  seg_->control(rank_).finished.value.store(round_, std::memory_order_release);
}

// ---- allreduce ----

void ShmBackend::allreduce(void* data, size_t count, DType dtype, ReduceOp op) {
  if (size_ == 1 || count == 0) return;
  const size_t es = SizeOf(dtype);
  char* p = static_cast<char*>(data);
  if (count * es <= kSmallBytes) return AllreduceSmall(p, count, dtype, op);
  const size_t piece = seg_->layout().slot_half / es;
  for (size_t base = 0; base < count; base += piece) {
    AllreduceRound(p + base * es, std::min(piece, count - base), dtype, op);
  }
}

void ShmBackend::AllreduceSmall(char* data, size_t count, DType dtype, ReduceOp op) {
  BeginRound();
  const size_t bytes = count * SizeOf(dtype);
  std::memcpy(seg_->slot(rank_, round_), data, bytes);
  const uint64_t tag = Tag(round_, 1);
  seg_->control(rank_).posted.value.store(tag, std::memory_order_release);
  Await("allreduce", [&](int s) {
    return seg_->control(s).posted.value.load(std::memory_order_acquire) >= tag;
  });
  synced_round_ = round_;
  if (size_ == 2) {
    // Every op is commutative, so both ranks compute identical bits.
    ReduceInto(data, data, seg_->slot(1 - rank_, round_), count, dtype, op);
  } else {
    ReduceInto(data, seg_->slot(0, round_), seg_->slot(1, round_), count, dtype, op);
    for (int s = 2; s < size_; ++s) ReduceInto(data, data, seg_->slot(s, round_), count, dtype, op);
  }
  if (op == ReduceOp::kAvg) DivideBy(data, count, dtype, size_);
  EndRound();
}

void ShmBackend::AllreduceRound(char* data, size_t count, DType dtype, ReduceOp op) {
  BeginRound();
  const size_t es = SizeOf(dtype);
  Region rg{count, size_t(size_), es, kChunkBytes / es, 0};
  rg.chunks = (rg.start(1) + rg.chunk_elems - 1) / rg.chunk_elems;
  for (size_t t = 1; t < rg.n; ++t) {
    size_t len = rg.start(t + 1) - rg.start(t);
    rg.chunks = std::max(rg.chunks, (len + rg.chunk_elems - 1) / rg.chunk_elems);
  }
  char* mine = seg_->slot(rank_, round_);
  for (size_t j = 0; j < rg.chunks + 2; ++j) {
    if (j < rg.chunks) {
      for (int t = 0; t < size_; ++t) {
        if (t == rank_) continue;
        auto [a, b] = rg.range(t, j);
        std::memcpy(mine + a * es, data + a * es, (b - a) * es);
      }
      seg_->control(rank_).posted.value.store(Tag(round_, j + 1), std::memory_order_release);
    }
    if (j >= 1 && j <= rg.chunks) ReduceChunk(data, rg, j - 1, dtype, op);
    if (j >= 2) GatherChunk(data, rg, j - 2);
  }
  // Reducing our (never empty) region waited for every rank's posts.
  synced_round_ = round_;
  EndRound();
}

void ShmBackend::ReduceChunk(char* data, const Region& rg, size_t j, DType dtype, ReduceOp op) {
  auto [a, b] = rg.range(rank_, j);
  if (a < b) {
    const uint64_t tag = Tag(round_, j + 1);
    Await("allreduce", [&](int s) {
      return s == rank_ || seg_->control(s).posted.value.load(std::memory_order_acquire) >= tag;
    });
    const size_t off = a * rg.esize, n = b - a;
    auto src = [&](int s) -> const char* {
      return (s == rank_ ? data : seg_->slot(s, round_)) + off;
    };
    char* dst = seg_->slot(rank_, round_) + off;
    ReduceInto(dst, src(0), src(1), n, dtype, op);
    for (int s = 2; s < size_; ++s) ReduceInto(dst, dst, src(s), n, dtype, op);
    if (op == ReduceOp::kAvg) DivideBy(dst, n, dtype, size_);
    std::memcpy(data + off, dst, n * rg.esize);
  }
  seg_->control(rank_).reduced.value.store(Tag(round_, j + 1), std::memory_order_release);
}

void ShmBackend::GatherChunk(char* data, const Region& rg, size_t j) {
  const uint64_t tag = Tag(round_, j + 1);
  for (int t = 0; t < size_; ++t) {
    auto [a, b] = rg.range(t, j);
    if (t == rank_ || a == b) continue;
    Await("allreduce", [&](int s) {
      return s != t || seg_->control(s).reduced.value.load(std::memory_order_acquire) >= tag;
    });
    std::memcpy(data + a * rg.esize, seg_->slot(t, round_) + a * rg.esize, (b - a) * rg.esize);
  }
}

// ---- broadcast / allgather / derived ops ----

void ShmBackend::broadcast(void* data, size_t count, DType dtype, int root) {
  FLOTILLA_ENFORCE(root >= 0 && root < size_, "broadcast root ", root, " outside group of ", size_);
  if (size_ == 1 || count == 0) return;
  const size_t bytes = count * SizeOf(dtype);
  const size_t piece = seg_->layout().slot_half;
  char* p = static_cast<char*>(data);
  for (size_t base = 0; base < bytes; base += piece) {
    BroadcastRound(p + base, std::min(piece, bytes - base), root);
  }
}

void ShmBackend::BroadcastRound(char* data, size_t bytes, int root) {
  BeginRound();
  char* slot = seg_->slot(root, round_);
  const size_t chunks = (bytes + kChunkBytes - 1) / kChunkBytes;
  for (size_t j = 0; j < chunks; ++j) {
    const size_t off = j * kChunkBytes, n = std::min(kChunkBytes, bytes - off);
    const uint64_t tag = Tag(round_, j + 1);
    if (rank_ == root) {
      std::memcpy(slot + off, data + off, n);
      seg_->control(root).posted.value.store(tag, std::memory_order_release);
    } else {
      Await("broadcast", [&](int s) {
        return s != root || seg_->control(s).posted.value.load(std::memory_order_acquire) >= tag;
      });
      std::memcpy(data + off, slot + off, n);
    }
  }
  EndRound();
}

void ShmBackend::allgather(const void* in, void* out, size_t count, DType dtype) {
  if (count == 0) return;
  const size_t bytes = count * SizeOf(dtype);
  const size_t piece = seg_->layout().slot_half;
  for (size_t base = 0; base < bytes; base += piece) {
    AllgatherRound(static_cast<const char*>(in) + base, static_cast<char*>(out) + base,
                   std::min(piece, bytes - base), bytes);
  }
}

void ShmBackend::AllgatherRound(const char* in, char* out, size_t bytes, size_t stride) {
  std::memcpy(out + rank_ * stride, in, bytes);
  if (size_ == 1) return;
  BeginRound();
  std::memcpy(seg_->slot(rank_, round_), in, bytes);
  const uint64_t tag = Tag(round_, 1);
  seg_->control(rank_).posted.value.store(tag, std::memory_order_release);
  Await("allgather", [&](int s) {
    return seg_->control(s).posted.value.load(std::memory_order_acquire) >= tag;
  });
  synced_round_ = round_;
  for (int t = 0; t < size_; ++t) {
    if (t != rank_) std::memcpy(out + t * stride, seg_->slot(t, round_), bytes);
  }
  EndRound();
}

void ShmBackend::reduce_scatter(const void* in, void* out, size_t count, DType dtype,
                               ReduceOp op) {
  ReduceScatterViaAllreduce(*this, rank_, size_, in, out, count, dtype, op);
}

// A dedicated reduce would save little: the allreduce is already the
// bandwidth-optimal pattern here.
void ShmBackend::reduce(void* data, size_t count, DType dtype, ReduceOp op, int root) {
  ReduceViaAllreduce(*this, size_, data, count, dtype, op, root);
}

void ShmBackend::barrier() {
  if (size_ == 1) return;
  BeginRound();
  const uint64_t tag = Tag(round_, 1);
  seg_->control(rank_).posted.value.store(tag, std::memory_order_release);
  Await("barrier", [&](int s) {
    return seg_->control(s).posted.value.load(std::memory_order_acquire) >= tag;
  });
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
    Await("send", [&](int s) {
      return s != peer || ch.acked.value.load(std::memory_order_acquire) >= seq;
    });
    const size_t n = std::min(cap, bytes - off);
    std::memcpy(buf, static_cast<const char*>(data) + off, n);
    ch.header.value.store((uint64_t(tag) << 32) | n, std::memory_order_relaxed);
    ch.sent.value.store(seq + 1, std::memory_order_release);
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
    Await("recv", [&](int s) {
      return s != peer || ch.sent.value.load(std::memory_order_acquire) > seq;
    });
    const uint64_t header = ch.header.value.load(std::memory_order_relaxed);
    const size_t n = std::min(cap, bytes - off);
    FLOTILLA_ENFORCE(uint32_t(header >> 32) == tag && (header & 0xffffffffu) == n,
                     "recv on rank ", rank_, " from rank ", peer, ": expected tag ", tag, " and ",
                     bytes, " bytes, got tag ", uint32_t(header >> 32), " with a ",
                     (header & 0xffffffffu), "-byte chunk");
    std::memcpy(static_cast<char*>(data) + off, buf, n);
    ch.acked.value.store(seq + 1, std::memory_order_release);
    off += n;
  } while (off < bytes);
}

}  // namespace flotilla::comm::shm
