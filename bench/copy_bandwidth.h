// This machine's copy bandwidth at a size: the physical limit a same-host
// collective works against. One process copies between two `bytes`-sized
// buffers, over and over (ordinary and cache-bypassing stores, the faster
// kept), pinned to a core; then one such process per core at once, each
// reporting its own rate (cores share the memory bus, so this is the rate
// each rank of a collective can count on).
#pragma once

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/reduce_kernels.h"

namespace flotilla::bench {

struct CopyRate {
  double one_core_gbps = 0;   // bytes copied per second, one core busy
  double per_core_gbps = 0;   // the same per core, every core busy
};

// Median over batches of the copy rate of `bytes` on this process.
inline double CopyGbps(size_t bytes, bool stream) {
  std::unique_ptr<char[]> src(new (std::align_val_t(64)) char[bytes]);
  std::unique_ptr<char[]> dst(new (std::align_val_t(64)) char[bytes]);
  std::memset(src.get(), 1, bytes);
  std::memset(dst.get(), 2, bytes);
  const int reps = int(std::clamp<size_t>((size_t(64) << 20) / bytes, 2, 4096));
  std::vector<double> rates;
  for (int b = 0; b < 7; ++b) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) comm::CopyBytes(dst.get(), src.get(), bytes, stream);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rates.push_back(double(bytes) * reps / s / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

// Runs the copy on `cores` pinned processes started together; returns the
// mean of their rates.
inline double CopyOnCores(size_t bytes, int cores) {
  int go[2], results[2];
  if (pipe(go) != 0 || pipe(results) != 0) return 0;
  std::vector<pid_t> kids;
  for (int c = 0; c < cores; ++c) {
    pid_t pid = fork();
    if (pid == 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(c, &set);
      sched_setaffinity(0, sizeof(set), &set);
      close(go[1]);
      char x;
      (void)!read(go[0], &x, 1);  // EOF when the parent closes: all start at once
      double r = std::max(CopyGbps(bytes, false), CopyGbps(bytes, true));
      (void)!write(results[1], &r, sizeof(r));
      _exit(0);
    }
    kids.push_back(pid);
  }
  close(go[0]);
  close(go[1]);
  close(results[1]);
  double sum = 0, r = 0;
  int got = 0;
  while (read(results[0], &r, sizeof(r)) == sizeof(r)) sum += r, ++got;
  close(results[0]);
  for (pid_t k : kids) waitpid(k, nullptr, 0);
  return got ? sum / got : 0;
}

inline CopyRate MeasureCopy(size_t bytes, int cores) {
  return {CopyOnCores(bytes, 1), CopyOnCores(bytes, cores)};
}

}  // namespace flotilla::bench
