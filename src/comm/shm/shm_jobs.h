// The two shapes of shm collective, as data (private to shm): a reduction
// over regions owned by ranks, and a set of ranks sending to the others.
#pragma once

#include <vector>

#include "comm/shm/shm_backend.h"

namespace flotilla::comm::shm {

// Rank r owns region r: len[r] elements at byte offset in_off[r] of every
// rank's input, reduced in rank order by r. The result lands at out_off[r]
// of the output of r (when keep_own) and of the gathering ranks.
struct ShmBackend::ReduceJob {
  const char* what = "";
  const char* in = nullptr;
  char* out = nullptr;
  DType dtype = DType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  size_t esize = 0;
  std::vector<size_t> in_off, out_off, len;
  size_t in_bytes = 0;  // extent of the input
  bool keep_own = true;
  // kAll: every rank gathers every region; kNone: nobody; else that rank.
  static constexpr int kAll = -1, kNone = -2;
  int gatherer = kAll;
  // The pipeline's cut and who waits for whom (ReducePipelined fills them).
  size_t chunk_elems = 0, steps = 0;
  bool stream = false;
  std::vector<char> peers;      // by rank: every rank but this one
  std::vector<char> gatherers;  // by rank: peers that copy results out

  bool Gathers(int rank) const { return gatherer == kAll || gatherer == rank; }
  // Whether owner `r` posts its result in its ring for others.
  bool Shares(int r, int size) const {
    return gatherer == kAll ? size > 1 : gatherer >= 0 && gatherer != r;
  }
  // Elements [a, b) of region r moved at pipeline step j (a == b: none).
  std::pair<size_t, size_t> Range(int r, size_t j) const {
    size_t a = std::min(j * chunk_elems, len[r]);
    return {a, std::min(a + chunk_elems, len[r])};
  }
};

// Every rank in `sources` sends `bytes` from its `in`; every other rank
// receives source s's bytes at out + out_off[s].
struct ShmBackend::SendJob {
  const char* what = "";
  std::vector<char> sources;  // by rank: 1 when it sends
  const char* in = nullptr;
  size_t bytes = 0;
  char* out = nullptr;
  std::vector<size_t> out_off;
  size_t chunk = 0, steps = 0;
  bool stream = false;
  std::vector<char> peers;  // by rank: every rank but this one

  std::pair<size_t, size_t> Range(size_t j) const {
    size_t a = std::min(j * chunk, bytes);
    return {a, std::min(a + chunk, bytes)};
  }
};

}  // namespace flotilla::comm::shm
