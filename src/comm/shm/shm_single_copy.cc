// Broadcast and allgather by single-copy reads of the senders' buffers (see
// shm_backend.h and peer_memory.h).
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "comm/reduce_kernels.h"
#include "comm/shm/peer_memory.h"
#include "comm/shm/shm_backend.h"
#include "comm/shm/shm_jobs.h"
#include "flotilla/common/enforce.h"

namespace flotilla::comm::shm {
namespace {

uint64_t ProbeValue(int rank) { return 0x466c6f74696c6c61ull ^ uint64_t(rank); }

}  // namespace

// Every rank exposes a word, reads every other's, and says whether it could;
// single copy is on only when all could, so the ranks agree.
bool ShmBackend::ProbeSingleCopy() {
  const char* env = std::getenv("FLOTILLA_SHM_SINGLE_COPY");
  const bool wanted = options_.single_copy && !(env && std::string(env) == "0");
  RankControl& me = seg_->control(rank_);
  probe_word_ = ProbeValue(rank_);
  me.addr.value.store(reinterpret_cast<uint64_t>(&probe_word_), std::memory_order_relaxed);
  Publish(me.probe, 1);
  Await("setup", 1, [&](int s) { return &seg_->control(s).probe; });
  bool ok = wanted;
  for (int s = 0; s < size_ && ok; ++s) {
    if (s == rank_) continue;
    const RankControl& peer = seg_->control(s);
    uint64_t got = 0;
    ok = ReadPeer(int64_t(peer.pid.value.load()), &got, peer.addr.value.load(), sizeof(got)) == 0 &&
         got == ProbeValue(s);
  }
  Publish(me.probe, ok ? 2 : 3);
  Await("setup", 2, [&](int s) { return &seg_->control(s).probe; });
  for (int s = 0; s < size_; ++s) ok &= seg_->control(s).probe.value.load() == 2;
  return ok;
}

void ShmBackend::ReadFrom(int rank, char* to, size_t bytes) {
  const RankControl& peer = seg_->control(rank);
  const int64_t pid = int64_t(peer.pid.value.load(std::memory_order_relaxed));
  const int err = ReadPeer(pid, to, peer.addr.value.load(std::memory_order_relaxed), bytes);
  FLOTILLA_CHECK(err != ESRCH, Unavailable, "shm on rank ", rank_, ": rank ", rank, " (pid ", pid,
                 ") died");
  FLOTILLA_CHECK(err == 0, Internal, "shm on rank ", rank_, ": reading ", bytes,
                 " bytes from rank ", rank, " (pid ", pid, "): ", std::strerror(err));
}

// A rank that has a core of its own spins through the peers' copy (about
// bytes / 4 GB/s, at most 2 ms): parked, it would wait for a wake-up that
// costs tens of µs on a virtual machine (1 MB broadcast: 92-96 -> 51-55 µs).
// With more ranks than cores the usual short spin stays.
std::chrono::microseconds ShmBackend::CopySpin(size_t bytes) const {
  const auto spin = waiter_.options().spin;
  if (spin < kOwnCoreSpin) return spin;
  return std::clamp(std::chrono::microseconds(bytes / 4000), spin, std::chrono::microseconds(2000));
}

// Senders expose their buffer and post; receivers read each sender's buffer
// into theirs and post; senders return once every receiver has read.
void ShmBackend::SendSingleCopy(const SendJob& job) {
  BeginRound();
  const uint64_t tag = Tag(round_, 1);
  RankControl& me = seg_->control(rank_);
  const bool source = job.sources[rank_];
  const auto spin = CopySpin(job.bytes);
  if (source) {
    me.addr.value.store(reinterpret_cast<uint64_t>(job.in), std::memory_order_relaxed);
    Publish(me.posted, tag);
    char* own = job.out + job.out_off[rank_];
    if (own != job.in) CopyBytes(own, job.in, job.bytes, false);
  }
  bool received = false;
  for (int s = 0; s < size_; ++s) {
    if (s == rank_ || !job.sources[s]) continue;
    Await(job.what, tag, [&](int t) { return t == s ? &seg_->control(t).posted : nullptr; },
          spin);
    ReadFrom(s, job.out + job.out_off[s], job.bytes);
    received = true;
  }
  if (received) Publish(me.gathered, tag);
  if (source) {
    // Every other rank has read our buffer (and so posted in this round).
    Await(job.what, tag, [&](int s) { return s == rank_ ? nullptr : &seg_->control(s).gathered; },
          spin);
    synced_round_ = round_;
  }
  EndRound();
}

}  // namespace flotilla::comm::shm
