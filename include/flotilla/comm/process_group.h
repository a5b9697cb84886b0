// ProcessGroup: the collectives of `size` ranks that met through a Store.
//
//   auto pg = NewProcessGroup(store, rank, size, {.backend = "auto"});
//   pg->allreduce(grad, ReduceOp::kAvg);              // blocking, in place
//   auto w = pg->allreduceAsync(bucket, ReduceOp::kSum, /*comm=*/1);
//   ... w->wait();
//
// Every rank must issue the same collectives in the same order on each
// communicator. With comm_num > 1 the group holds that many independent
// communicators, each with its own Backend and worker thread, so async
// operations on different communicators overlap. A blocking call on
// communicator c first waits for c's queued async work, then runs on the
// calling thread. Methods are thread-safe.
//
// Failure: an operation in which a peer dies or never arrives throws
// Unavailable (peer died) or DeadlineExceeded (timeout) naming the ranks;
// after stall_warning_after a warning names the ranks still missing.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "flotilla/comm/backend.h"
#include "flotilla/comm/store.h"
#include "flotilla/comm/types.h"
#include "flotilla/comm/work.h"
#include "flotilla/core/tensor.h"

namespace flotilla::comm {

struct CollectiveSite;  // comm/collective_trace.h
struct CollectiveOp;

struct ProcessGroupOptions {
  // "auto" | "shm" | "gloo" | "hierarchical". auto: shm when every rank has
  // the same host_id, gloo when all differ, hierarchical otherwise.
  std::string backend = "auto";
  std::chrono::milliseconds timeout = Store::kDefaultTimeout;
  std::chrono::milliseconds stall_warning_after = std::chrono::seconds(60);
  // Groups ranks by host; empty = this machine's hostname.
  std::string host_id;
  // Independent communicators (each a Backend and a thread).
  int comm_num = 1;
  // Where gloo listens: a network interface name, or a hostname/address.
  // Empty: FLOTILLA_GLOO_IFNAME / FLOTILLA_GLOO_HOSTNAME, else POD_IP (set by
  // the launcher), else 127.0.0.1 when every rank is on this host, else the
  // hostname.
  std::string gloo_interface;
  std::string gloo_hostname;
  // Key prefix in the store, so several groups can share one store. Ranks
  // that create several groups under one name must create them in the same
  // order (the k-th of each rank meet).
  std::string name = "pg";
};

struct ProcessGroupStats {
  int64_t allreduce_calls = 0;
  int64_t broadcast_calls = 0;
  int64_t allreduce_bytes = 0;
};

class ProcessGroup {
 public:
  // Use NewProcessGroup.
  // `store` (the group's own key space) lets a stall monitor name the ranks
  // missing from a pending op; without it only backends warn.
  ProcessGroup(int rank, int size, ProcessGroupOptions options,
               std::vector<std::unique_ptr<Backend>> backends,
               std::shared_ptr<Store> store = nullptr);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int comm_num() const { return static_cast<int>(comms_.size()); }
  // The backend chosen ("shm", "gloo", "hierarchical").
  const std::string& backend() const { return backend_; }
  ProcessGroupStats stats() const;

  // ---- blocking, on tensors (in place; the tensor must be initialized) ----
  void allreduce(Tensor& t, ReduceOp op = ReduceOp::kSum, int comm = 0);
  void broadcast(Tensor& t, int root, int comm = 0);
  // out is resized to [size * numel(in)].
  void allgather(const Tensor& in, Tensor& out, int comm = 0);
  // out is resized to [numel(in) / size]; numel(in) must divide by size.
  void reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op = ReduceOp::kSum, int comm = 0);
  void reduce(Tensor& t, ReduceOp op, int root, int comm = 0);
  void send(const Tensor& t, int peer, uint32_t tag = 0, int comm = 0);
  void recv(Tensor& t, int peer, uint32_t tag = 0, int comm = 0);
  void barrier(int comm = 0);

  // ---- blocking, on raw buffers ----
  void allreduce(void* data, size_t count, DType dtype, ReduceOp op, int comm = 0);
  void broadcast(void* data, size_t count, DType dtype, int root, int comm = 0);
  void allgather(const void* in, void* out, size_t count, DType dtype, int comm = 0);
  void reduce_scatter(const void* in, void* out, size_t count, DType dtype, ReduceOp op,
                      int comm = 0);
  void reduce(void* data, size_t count, DType dtype, ReduceOp op, int root, int comm = 0);
  void send(const void* data, size_t bytes, int peer, uint32_t tag = 0, int comm = 0);
  void recv(void* data, size_t bytes, int peer, uint32_t tag = 0, int comm = 0);

  // ---- asynchronous: queued on communicator `comm`'s thread. The tensor
  // (a shared handle) is kept alive by the Work; raw buffers must outlive it.
  std::shared_ptr<Work> allreduceAsync(Tensor t, ReduceOp op = ReduceOp::kSum, int comm = 0);
  std::shared_ptr<Work> broadcastAsync(Tensor t, int root, int comm = 0);
  std::shared_ptr<Work> allreduceAsync(void* data, size_t count, DType dtype, ReduceOp op,
                                       int comm = 0);
  std::shared_ptr<Work> barrierAsync(int comm = 0);
  // Runs fn(backend) on communicator `comm`'s thread, in queue order.
  std::shared_ptr<Work> Enqueue(int comm, std::function<void(Backend&)> fn);

 private:
  struct Communicator;
  class StallMonitor;
  Communicator& Comm(int comm);
  // Queues `op` (traced as a collective) on `comm`'s thread.
  std::shared_ptr<Work> EnqueueOp(int comm, CollectiveOp op, std::function<void(Backend&)> fn);
  // Runs fn on the caller's thread once `comm`'s queue is drained.
  template <typename Fn>
  void RunBlocking(int comm, CollectiveOp op, const Fn& fn);

  int rank_;
  int size_;
  ProcessGroupOptions options_;
  std::string backend_;
  std::unique_ptr<CollectiveSite> site_;  // what every collective's trace shares
  std::vector<std::unique_ptr<Communicator>> comms_;
  std::unique_ptr<StallMonitor> monitor_;  // declared after comms_: stops first
  std::atomic<int64_t> allreduce_calls_{0};
  std::atomic<int64_t> broadcast_calls_{0};
  std::atomic<int64_t> allreduce_bytes_{0};
};

// Meets the other ranks through `store` and builds the group's backends.
// Blocks until all `size` ranks arrive; warns after stall_warning_after
// naming the ranks not yet joined; throws DeadlineExceeded naming them after
// options.timeout. Throws InvalidArgument for a bad rank/size/backend.
std::unique_ptr<ProcessGroup> NewProcessGroup(std::shared_ptr<Store> store, int rank, int size,
                                              ProcessGroupOptions options = {});

}  // namespace flotilla::comm
