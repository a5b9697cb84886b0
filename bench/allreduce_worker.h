// One Flotilla rank of bench_allreduce: joins a group through a TCP store,
// times each collective at each size and (rank 0) prints JSON lines.
#pragma once

#include <string>
#include <vector>

namespace flotilla::bench {

struct WorkerArgs {
  std::string impl = "shm";  // Flotilla backend: shm, gloo
  std::string store;         // host:port
  bool host_store = false;   // rank 0 serves the store
  std::string host_id, gloo_host;
  int rank = 0, size = 2;
  size_t min_bytes = 0, max_bytes = size_t(64) << 20;
  std::vector<std::string> ops{"allreduce"};
  std::string label;  // impl name printed; default impl
  // shm only: drive the backend directly and print where the time went
  // (copy-in, reduce, copy-out, waiting) per size.
  bool phases = false;
};

// Returns the process exit code (1 on a wrong result or an error).
int RunWorker(const WorkerArgs& a);

}  // namespace flotilla::bench
