// Timing shared by bench_allreduce and its baseline programs, so that every
// implementation is measured the same way: for each size, a few batches of
// back-to-back collectives separated by a barrier; the per-op time is the
// median over batches of (batch time / batch length). Rank 0 prints one JSON
// line per (collective, size).
//
// Sizes follow nccl-tests: `bytes` is the buffer of allreduce, broadcast and
// reduce, the whole output of allgather and the whole input of
// reduce_scatter (each rank contributes or receives bytes / ranks). Bus
// bandwidth = algbw x the collective's factor, so that every collective's
// busbw compares with the same link or memory speed.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace flotilla::bench {

inline std::vector<size_t> AllreduceSizes() {
  std::vector<size_t> sizes;
  for (size_t b = 4096; b <= (size_t(64) << 20); b *= 4) sizes.push_back(b);
  return sizes;
}

inline const std::vector<std::string>& Collectives() {
  static const std::vector<std::string> ops{"allreduce", "broadcast", "allgather",
                                            "reduce_scatter", "reduce"};
  return ops;
}

// nccl-tests' bus-bandwidth factor of a collective at `ranks` ranks.
inline double BusFactor(const std::string& op, int ranks) {
  if (op == "allreduce") return 2.0 * (ranks - 1) / ranks;
  if (op == "allgather" || op == "reduce_scatter") return double(ranks - 1) / ranks;
  return 1.0;  // broadcast, reduce
}

// Median seconds per `op()`; `barrier()` lines the ranks up before a batch.
template <typename Op, typename Barrier>
double MedianSecondsPerOp(size_t bytes, Op op, Barrier barrier) {
  // Every rank must run the same number of ops, so the batch length depends
  // on the size only (about 32 MB of payload per batch).
  const int per_batch = int(std::clamp<size_t>((size_t(32) << 20) / bytes, 2, 300));
  const int batches = 7;
  for (int i = 0; i < std::min(per_batch, 20); ++i) op();  // warm caches and connections
  std::vector<double> times;
  for (int b = 0; b < batches; ++b) {
    barrier();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < per_batch; ++i) op();
    auto t1 = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double>(t1 - t0).count() / per_batch);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

inline std::string CollectiveJson(const std::string& op, const std::string& impl, size_t bytes,
                                  int ranks, double sec) {
  const double algbw = bytes / sec / 1e9;
  const double busbw = algbw * BusFactor(op, ranks);
  char buf[256];
  snprintf(buf, sizeof(buf),
           "{\"bench\":\"%s\",\"impl\":\"%s\",\"bytes\":%zu,\"ranks\":%d,"
           "\"busbw_gbps\":%.3f,\"algbw_gbps\":%.3f,\"latency_us\":%.2f}",
           op.c_str(), impl.c_str(), bytes, ranks, busbw, algbw, sec * 1e6);
  return buf;
}

inline std::string AllreduceJson(const std::string& impl, size_t bytes, int ranks, double sec) {
  return CollectiveJson("allreduce", impl, bytes, ranks, sec);
}

}  // namespace flotilla::bench
