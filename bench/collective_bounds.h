// The memory bound of Flotilla's shm collectives (docs/comm.md explains it).
//
// Every byte a rank's loops load or store costs memory (or cache) bandwidth.
// A copy of B bytes loads B and stores B, so a core copying at C bytes/s
// moves 2C bytes/s. If the algorithm makes its busiest rank move M bytes per
// byte of the collective's size, the collective cannot take less than
// M x bytes / (2C), which caps its bus bandwidth at
//   bound = BusFactor x 2C / M.
#pragma once

#include <string>

#include "bench_allreduce_timing.h"

namespace flotilla::bench {

// Bytes the busiest rank loads plus stores per byte of `bytes` (nccl-tests'
// size), for the pipelined shm algorithms at n ranks (see shm_backend.h):
// allreduce: copy-in (n-1)/n, reduce n/n loads + 2/n stores (result to the
//   caller's buffer and the ring), gather (n-1)/n; copies count twice.
// broadcast: the root copies in S, each receiver copies out S.
// allgather (S = n blocks): copy-in 1 block, own block to the output, n-1
//   blocks copied out.
// reduce_scatter (S = n blocks): copy-in n-1 blocks, reduce n loads + 1 store.
// reduce: the root's share: allreduce's without the store to the ring.
inline double ShmBytesMoved(const std::string& op, int n) {
  if (op == "allreduce") return (5.0 * n - 2) / n;
  if (op == "broadcast") return 2.0;
  if (op == "allgather") return 2.0 * (n + 1) / n;
  if (op == "reduce_scatter") return (3.0 * n - 1) / n;
  if (op == "reduce") return (5.0 * n - 3) / n;
  return 0;
}

// The bus bandwidth (GB/s) that bytes moved at `copy_gbps` per core allow.
inline double MemoryBoundBusbw(const std::string& op, int n, double copy_gbps) {
  return BusFactor(op, n) * 2.0 * copy_gbps / ShmBytesMoved(op, n);
}

}  // namespace flotilla::bench
