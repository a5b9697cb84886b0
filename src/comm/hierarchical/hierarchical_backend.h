// HierarchicalBackend: allreduce in two levels, for groups spread over
// several hosts with several ranks each.
//
// Choice: within a host the ranks allreduce over shared memory; then one
// leader per host (its lowest rank) allreduces across hosts over gloo; then
// each leader broadcasts the result over shared memory. Only 1/local_size of
// the ranks touch the network, each with the whole buffer once, which is
// what a host's single NIC can carry anyway; the alternative (every local
// index allreducing a 1/local_size shard across hosts) needs a
// reduce-scatter/all-gather inside the host and pays off only with several
// NICs. The other collectives run on a gloo group of all ranks, which is
// correct everywhere and rarely on a training hot path.
#pragma once

#include <memory>

#include "flotilla/comm/backend.h"

namespace flotilla::comm {

class HierarchicalBackend : public Backend {
 public:
  // `leaders` is null on ranks that are not their host's leader.
  HierarchicalBackend(int size, std::unique_ptr<Backend> local, std::unique_ptr<Backend> leaders,
                      std::unique_ptr<Backend> global);

  std::string name() const override { return "hierarchical"; }
  void allreduce(void* data, size_t count, DType dtype, ReduceOp op) override;
  void broadcast(void* data, size_t count, DType dtype, int root) override;
  void allgather(const void* in, void* out, size_t count, DType dtype) override;
  void reduce_scatter(const void* in, void* out, size_t count, DType dtype, ReduceOp op) override;
  void reduce(void* data, size_t count, DType dtype, ReduceOp op, int root) override;
  void barrier() override;
  void send(const void* data, size_t bytes, int peer, uint32_t tag) override;
  void recv(void* data, size_t bytes, int peer, uint32_t tag) override;

 private:
  int size_;
  std::unique_ptr<Backend> local_;
  std::unique_ptr<Backend> leaders_;
  std::unique_ptr<Backend> global_;
};

}  // namespace flotilla::comm
