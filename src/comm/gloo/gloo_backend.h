// GlooBackend: collectives over Gloo's TCP transport, for ranks on any hosts.
//
// Allreduce picks Gloo's algorithm by size: ring for small buffers, ring-
// chunked (pipelined) for large ones. Halving-doubling would suit small
// buffers on many ranks, but with Debian's Gloo 0.5 a live halving-doubling
// instance made a later ring-chunked one on the same context deadlock, so
// it is not used.
// Gloo's classic algorithms bind their buffers at construction, so each is
// built once per (count, dtype, op) over a staging buffer owned here and
// reused; keying on the shape rather than on the caller's pointer keeps the
// construction order identical on every rank, which Gloo requires. The
// staging copy costs a memcpy, small next to any network.
//
// Gloo errors (a closed connection, a timeout) become Unavailable /
// DeadlineExceeded naming the ranks on this host found dead, or else the
// peers that may have failed.
#pragma once

#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "comm/rendezvous.h"
#include "flotilla/comm/backend.h"
#include "flotilla/comm/store.h"

namespace gloo {
class Context;
class Algorithm;
namespace transport {
class Device;
}
}  // namespace gloo

namespace flotilla::comm::gloo_backend {

struct GlooOptions {
  std::chrono::milliseconds timeout = Store::kDefaultTimeout;
  // Peers' host ids and pids (by rank within this group), to name dead ranks.
  std::vector<PeerInfo> peers;
  std::string host_id;
};

// Creates the TCP device gloo listens on. `iface` wins over `hostname`.
std::shared_ptr<gloo::transport::Device> CreateDevice(const std::string& iface,
                                                      const std::string& hostname);

class GlooBackend : public Backend {
 public:
  // Connects a full mesh through `store`; blocks until every rank has.
  GlooBackend(std::shared_ptr<Store> store, int rank, int size,
              std::shared_ptr<gloo::transport::Device> device, GlooOptions options);
  ~GlooBackend() override;

  std::string name() const override { return "gloo"; }
  void allreduce(void* data, size_t count, DType dtype, ReduceOp op) override;
  void broadcast(void* data, size_t count, DType dtype, int root) override;
  void allgather(const void* in, void* out, size_t count, DType dtype) override;
  void reduce_scatter(const void* in, void* out, size_t count, DType dtype, ReduceOp op) override;
  void reduce(void* data, size_t count, DType dtype, ReduceOp op, int root) override;
  void barrier() override;
  void send(const void* data, size_t bytes, int peer, uint32_t tag) override;
  void recv(void* data, size_t bytes, int peer, uint32_t tag) override;

 private:
  struct Cached;
  Cached& AllreduceAlgorithm(size_t count, DType dtype, ReduceOp op);
  void AllreduceUnbound(void* data, size_t count, DType dtype, ReduceOp op);
  // Runs fn, turning gloo's exceptions into flotilla errors naming ranks.
  void Guard(const char* what, const std::function<void()>& fn);
  std::string DescribeFailure() const;

  int rank_;
  int size_;
  GlooOptions options_;
  std::shared_ptr<gloo::Context> Connect(std::shared_ptr<Store> store,
                                        const std::shared_ptr<gloo::transport::Device>& device);

  // Gloo's classic algorithms (allreduce, barrier) and its unbound-buffer
  // operations (broadcast, allgather, send/recv) stalled when interleaved on
  // one context, so each kind gets its own full mesh.
  std::shared_ptr<gloo::Context> context_;
  std::shared_ptr<gloo::Context> unbound_context_;
  std::unique_ptr<gloo::Algorithm> barrier_;
  std::list<std::unique_ptr<Cached>> cache_;  // most recently used first
};

}  // namespace flotilla::comm::gloo_backend
