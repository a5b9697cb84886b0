#include "comm/hierarchical/hierarchical_backend.h"

#include "comm/reduce_kernels.h"

namespace flotilla::comm {

HierarchicalBackend::HierarchicalBackend(int size, std::unique_ptr<Backend> local,
                                         std::unique_ptr<Backend> leaders,
                                         std::unique_ptr<Backend> global)
    : size_(size),
      local_(std::move(local)),
      leaders_(std::move(leaders)),
      global_(std::move(global)) {}

void HierarchicalBackend::allreduce(void* data, size_t count, DType dtype, ReduceOp op) {
  if (count == 0) return;
  // Averages are sums until the very end, so every level adds.
  const ReduceOp level_op = op == ReduceOp::kAvg ? ReduceOp::kSum : op;
  local_->allreduce(data, count, dtype, level_op);
  if (leaders_) leaders_->allreduce(data, count, dtype, level_op);
  local_->broadcast(data, count, dtype, /*root=*/0);
  if (op == ReduceOp::kAvg) DivideBy(data, count, dtype, size_);
}

void HierarchicalBackend::broadcast(void* data, size_t count, DType dtype, int root) {
  global_->broadcast(data, count, dtype, root);
}

void HierarchicalBackend::allgather(const void* in, void* out, size_t count, DType dtype) {
  global_->allgather(in, out, count, dtype);
}

void HierarchicalBackend::reduce_scatter(const void* in, void* out, size_t count, DType dtype,
                                         ReduceOp op) {
  global_->reduce_scatter(in, out, count, dtype, op);
}

void HierarchicalBackend::reduce(void* data, size_t count, DType dtype, ReduceOp op, int root) {
  global_->reduce(data, count, dtype, op, root);
}

void HierarchicalBackend::barrier() { global_->barrier(); }

void HierarchicalBackend::send(const void* data, size_t bytes, int peer, uint32_t tag) {
  global_->send(data, bytes, peer, tag);
}

void HierarchicalBackend::recv(void* data, size_t bytes, int peer, uint32_t tag) {
  global_->recv(data, bytes, peer, tag);
}

}  // namespace flotilla::comm
