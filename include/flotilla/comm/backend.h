// Backend: one communicator's transport and algorithms, the interface every
// backend (shm, gloo, hierarchical) implements. ProcessGroup owns one Backend
// per communicator and calls it from one thread at a time, so backends need
// not be thread-safe. Algorithms built from other Backends (hierarchical)
// see only this interface, never a concrete transport.
//
// Buffers are raw, contiguous arrays of `count` elements of `dtype`; the
// caller keeps them alive for the call. Every method blocks until done and
// throws DeadlineExceeded / Unavailable naming the ranks that did not take
// part, within the group's timeout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "flotilla/comm/types.h"
#include "flotilla/core/dtype.h"

namespace flotilla::comm {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  // In place: every rank ends with op over all ranks' data.
  virtual void allreduce(void* data, size_t count, DType dtype, ReduceOp op) = 0;
  // Every rank ends with root's data.
  virtual void broadcast(void* data, size_t count, DType dtype, int root) = 0;
  // out holds size*count elements: rank i's input at offset i*count.
  virtual void allgather(const void* in, void* out, size_t count, DType dtype) = 0;
  // in holds size*count elements; rank i receives the reduction of block i.
  virtual void reduce_scatter(const void* in, void* out, size_t count, DType dtype,
                              ReduceOp op) = 0;
  // In place on root; other ranks' buffers are left unspecified.
  virtual void reduce(void* data, size_t count, DType dtype, ReduceOp op, int root) = 0;
  virtual void barrier() = 0;
  // Point to point. Messages between a pair arrive in order; `tag` must
  // match on both sides.
  virtual void send(const void* data, size_t bytes, int peer, uint32_t tag) = 0;
  virtual void recv(void* data, size_t bytes, int peer, uint32_t tag) = 0;
};

}  // namespace flotilla::comm
