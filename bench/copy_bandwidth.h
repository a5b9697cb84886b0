// This machine's copy bandwidth at a size: the physical limit a same-host
// collective works against. One process copies between two `bytes`-sized
// buffers, over and over (ordinary and cache-bypassing stores, the faster
// kept), pinned to a core; then one such process per core at once, each
// reporting its own rate (cores share the memory bus, so this is the rate
// each rank of a collective can count on). The processes are the bench's own
// program started again (flotilla/testing/process.h) with --copy-worker.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/reduce_kernels.h"
#include "flotilla/testing/process.h"

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

// One process of CopyOnCores (`<bench> --copy-worker ...`).
struct CopyWorkerArgs {
  size_t bytes = 0;
  int core = 0;
  int go_fd = -1;     // EOF on it: start copying
  int ready_fd = -1;  // a byte on it: pinned and waiting
};

// Pins this process to the core, says it is ready, waits for the go, and
// prints its copy rate (GB/s) on stdout. Returns the exit code.
inline int RunCopyWorker(const CopyWorkerArgs& w) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(w.core, &set);
  sched_setaffinity(0, sizeof(set), &set);
  char x = 1;
  (void)!write(w.ready_fd, &x, 1);
  close(w.ready_fd);
  (void)!read(w.go_fd, &x, 1);  // EOF when the parent closes: all start at once
  close(w.go_fd);
  std::printf("%.17g\n", std::max(CopyGbps(w.bytes, false), CopyGbps(w.bytes, true)));
  return 0;
}

// Runs the copy on `cores` pinned processes of `self` (a bench that runs
// RunCopyWorker for --copy-worker) started together; returns the mean of
// their rates (0 when none reported one).
inline double CopyOnCores(const std::string& self, size_t bytes, int cores) {
  int go[2], ready[2];
  if (pipe2(go, O_CLOEXEC) != 0) return 0;
  if (pipe2(ready, O_CLOEXEC) != 0) {
    close(go[0]);
    close(go[1]);
    return 0;
  }
  fcntl(go[0], F_SETFD, 0);  // the workers' ends cross exec
  fcntl(ready[1], F_SETFD, 0);
  std::vector<testing::Process> kids;
  for (int c = 0; c < cores; ++c) {
    testing::ProcessOptions o{{self, "--copy-worker", "--copy-bytes", std::to_string(bytes),
                               "--copy-core", std::to_string(c), "--go-fd", std::to_string(go[0]),
                               "--ready-fd", std::to_string(ready[1])}};
    o.name = "copy worker on core " + std::to_string(c);
    o.stdout_to = testing::Output::kCapture;
    kids.emplace_back(std::move(o));
  }
  close(go[0]);
  close(ready[1]);
  char x;
  for (int c = 0; c < cores && read(ready[0], &x, 1) == 1; ++c) {
  }
  close(ready[0]);
  close(go[1]);
  double sum = 0;
  int got = 0;
  for (auto& k : kids) {
    double r = 0;
    if (k.Wait(std::chrono::minutes(5)) == 0 && std::sscanf(k.Stdout().c_str(), "%lf", &r) == 1) {
      sum += r, ++got;
    }
  }
  return got ? sum / got : 0;
}

inline CopyRate MeasureCopy(const std::string& self, size_t bytes, int cores) {
  return {CopyOnCores(self, bytes, 1), CopyOnCores(self, bytes, cores)};
}

}  // namespace flotilla::bench
