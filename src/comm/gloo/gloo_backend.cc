#include "comm/gloo/gloo_backend.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include <csignal>
#include <cstring>
#include <mutex>
#include <utility>

#include "comm/gloo/store_adapter.h"
#include "comm/derived_ops.h"
#include "comm/reduce_kernels.h"
#include "flotilla/comm/prefix_store.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"

namespace flotilla::comm::gloo_backend {
namespace {

// Above this, pipelining chunks beats the plain ring's fewer messages.
constexpr size_t kRingChunkedFromBytes = 256 * 1024;
// From here on allreduce runs on the caller's buffer (no staging copy).
constexpr size_t kUnboundFromBytes = 4 << 20;
// Cached allreduce algorithms (each holds a staging buffer).
constexpr size_t kCacheEntries = 16;
// Point-to-point slots live apart from the slots gloo's collectives use.
constexpr uint64_t kP2PSlotBase = uint64_t(0x30) << 56;

template <typename T>
const ::gloo::ReductionFunction<T>* GlooReduction(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax: return ::gloo::ReductionFunction<T>::max;
    case ReduceOp::kMin: return ::gloo::ReductionFunction<T>::min;
    case ReduceOp::kProd: return ::gloo::ReductionFunction<T>::product;
    default: return ::gloo::ReductionFunction<T>::sum;
  }
}

#if defined(__SANITIZE_THREAD__)
extern "C" void AnnotateBenignRaceSized(const char* file, int line, const volatile void* mem,
                                        unsigned long size, const char* description);
#endif

// gloo's ring allreduces send their "ready for your next write" notification
// from, and receive the neighbour's into, one int (dummy_): a rank's thread
// writev()s from it while gloo's device thread recv()s into it. Only the
// message's arrival matters; the int's value is never read. Under
// ThreadSanitizer that int alone is marked as a benign race, so races on the
// data buffers gloo sends and receives are still reported.
template <typename Ring>
class NotifiedRing final : public Ring {
 public:
  template <typename... Args>
  explicit NotifiedRing(Args&&... args) : Ring(std::forward<Args>(args)...) {
#if defined(__SANITIZE_THREAD__)
    AnnotateBenignRaceSized(__FILE__, __LINE__, &this->dummy_, sizeof(this->dummy_),
                            "gloo ring notification");
#endif
  }
};

}  // namespace

struct GlooBackend::Cached {
  size_t count;
  DType dtype;
  ReduceOp op;
  std::vector<char> staging;
  std::unique_ptr<::gloo::Algorithm> algorithm;
};

std::shared_ptr<gloo::transport::Device> CreateDevice(const std::string& iface,
                                                      const std::string& hostname) {
  ::gloo::transport::tcp::attr attr;
  if (!iface.empty()) {
    attr.iface = iface;
  } else {
    attr.hostname = hostname;
  }
  try {
    return ::gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    FLOTILLA_THROW(Unavailable, "cannot create gloo TCP device on ",
                   iface.empty() ? "host " + hostname : "interface " + iface, ": ", e.what());
  }
}

namespace {

// Gloo's TCP transport writes to peer sockets without MSG_NOSIGNAL: a write
// to a peer that just died raises SIGPIPE, whose default action kills this
// rank before Gloo can report the failure naming the peer. Ignore it (as
// gRPC does) unless the program installed a handler of its own.
void IgnoreSigpipe() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      signal(SIGPIPE, SIG_IGN);
    }
  });
}

}  // namespace

GlooBackend::GlooBackend(std::shared_ptr<Store> store, int rank, int size,
                         std::shared_ptr<gloo::transport::Device> device, GlooOptions options)
    : rank_(rank), size_(size), options_(std::move(options)) {
  IgnoreSigpipe();
  context_ = Connect(std::make_shared<PrefixStore>("algo", store), device);
  unbound_context_ = Connect(std::make_shared<PrefixStore>("unbound", store), device);
}

std::shared_ptr<::gloo::Context> GlooBackend::Connect(
    std::shared_ptr<Store> store, const std::shared_ptr<gloo::transport::Device>& device) {
  auto ctx = std::make_shared<::gloo::rendezvous::Context>(rank_, size_);
  ctx->setTimeout(options_.timeout);
  StoreAdapter adapter(std::move(store), options_.timeout);
  auto dev = device;
  Guard("connect", [&] { ctx->connectFullMesh(adapter, dev); });
  return ctx;
}

GlooBackend::~GlooBackend() = default;

std::string GlooBackend::DescribeFailure() const {
  std::vector<std::string> dead;
  std::vector<int> others;
  for (int r = 0; r < size_ && r < int(options_.peers.size()); ++r) {
    if (r == rank_) continue;
    others.push_back(r);
    const PeerInfo& p = options_.peers[r];
    if (p.host_id == options_.host_id && ProcessIsDead(p.pid)) {
      dead.push_back(StrCat("rank ", r, " (pid ", p.pid, ") died"));
    }
  }
  if (!dead.empty()) return Join(dead, ", ");
  // A peer's connection can drop before its process is gone: still name
  // the ranks ("rank 1", "ranks 0, 2, 3"), as the dead ones are named.
  std::vector<std::string> names;
  for (int r : others) names.push_back(std::to_string(r));
  return StrCat("no rank on this host is known dead yet; the failed peer is ",
                others.size() == 1 ? "rank " : "one of ranks ", Join(names, ", "));
}

void GlooBackend::Guard(const char* what, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    std::string text = StrCat("gloo ", what, " on rank ", rank_, " of ", size_, " failed: ",
                              DescribeFailure(), " (", msg, ")");
    if (msg.find("Timed out") != std::string::npos || msg.find("timed out") != std::string::npos) {
      FLOTILLA_THROW(DeadlineExceeded, text);
    }
    FLOTILLA_THROW(Unavailable, text);
  }
}

GlooBackend::Cached& GlooBackend::AllreduceAlgorithm(size_t count, DType dtype, ReduceOp op) {
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if ((*it)->count == count && (*it)->dtype == dtype && (*it)->op == op) {
      cache_.splice(cache_.begin(), cache_, it);
      return *cache_.front();
    }
  }
  if (cache_.size() >= kCacheEntries) cache_.pop_back();
  auto c = std::make_unique<Cached>(Cached{count, dtype, op, {}, nullptr});
  c->staging.resize(count * SizeOf(dtype));
  VisitDType(dtype, [&]<typename T>() {
    std::vector<T*> ptrs{reinterpret_cast<T*>(c->staging.data())};
    if (c->staging.size() < kRingChunkedFromBytes) {
      c->algorithm = std::make_unique<NotifiedRing<::gloo::AllreduceRing<T>>>(
          context_, ptrs, int(count), GlooReduction<T>(op));
    } else {
      c->algorithm = std::make_unique<NotifiedRing<::gloo::AllreduceRingChunked<T>>>(
          context_, ptrs, int(count), GlooReduction<T>(op));
    }
  });
  cache_.push_front(std::move(c));
  return *cache_.front();
}

void GlooBackend::allreduce(void* data, size_t count, DType dtype, ReduceOp op) {
  if (size_ == 1 || count == 0) return;
  Guard("allreduce", [&] {
    if (count * SizeOf(dtype) >= kUnboundFromBytes) return AllreduceUnbound(data, count, dtype, op);
    Cached& c = AllreduceAlgorithm(count, dtype, op);
    std::memcpy(c.staging.data(), data, c.staging.size());
    c.algorithm->run();
    std::memcpy(data, c.staging.data(), c.staging.size());
  });
  if (op == ReduceOp::kAvg) DivideBy(data, count, dtype, size_);
}

// Gloo's unbound-buffer ring works on the caller's buffer directly: no
// staging copies, which matter once the link is the only other cost.
void GlooBackend::AllreduceUnbound(void* data, size_t count, DType dtype, ReduceOp op) {
  ::gloo::AllreduceOptions opts(unbound_context_);
  VisitDType(dtype, [&]<typename T>() { opts.setOutput(static_cast<T*>(data), count); });
  opts.setAlgorithm(::gloo::AllreduceOptions::Algorithm::RING);
  opts.setReduceFunction([dtype, op](void* c, const void* a, const void* b, size_t n) {
    ReduceInto(c, a, b, n, dtype, op);
  });
  opts.setTimeout(options_.timeout);
  ::gloo::allreduce(opts);
}

void GlooBackend::broadcast(void* data, size_t count, DType dtype, int root) {
  FLOTILLA_ENFORCE(root >= 0 && root < size_, "broadcast root ", root, " outside group of ", size_);
  if (size_ == 1 || count == 0) return;
  Guard("broadcast", [&] {
    ::gloo::BroadcastOptions opts(unbound_context_);
    opts.setOutput(static_cast<char*>(data), count * SizeOf(dtype));
    opts.setRoot(root);
    opts.setTimeout(options_.timeout);
    ::gloo::broadcast(opts);
  });
}

void GlooBackend::allgather(const void* in, void* out, size_t count, DType dtype) {
  const size_t bytes = count * SizeOf(dtype);
  if (bytes == 0) return;
  if (size_ == 1) {
    std::memcpy(out, in, bytes);
    return;
  }
  Guard("allgather", [&] {
    ::gloo::AllgatherOptions opts(unbound_context_);
    opts.setInput(const_cast<char*>(static_cast<const char*>(in)), bytes);
    opts.setOutput(static_cast<char*>(out), bytes * size_);
    opts.setTimeout(options_.timeout);
    ::gloo::allgather(opts);
  });
}

void GlooBackend::reduce_scatter(const void* in, void* out, size_t count, DType dtype,
                                ReduceOp op) {
  ReduceScatterViaAllreduce(*this, rank_, size_, in, out, count, dtype, op);
}

// A dedicated reduce would save little: the allreduce is already the
// bandwidth-optimal pattern here.
void GlooBackend::reduce(void* data, size_t count, DType dtype, ReduceOp op, int root) {
  ReduceViaAllreduce(*this, size_, data, count, dtype, op, root);
}

void GlooBackend::barrier() {
  if (size_ == 1) return;
  Guard("barrier", [&] {
    if (!barrier_) barrier_ = std::make_unique<::gloo::BarrierAllToAll>(context_);
    barrier_->run();
  });
}

void GlooBackend::send(const void* data, size_t bytes, int peer, uint32_t tag) {
  FLOTILLA_ENFORCE(peer >= 0 && peer < size_ && peer != rank_, "send to invalid peer ", peer);
  char dummy = 0;
  void* p = bytes ? const_cast<void*>(data) : &dummy;
  Guard("send", [&] {
    auto buf = unbound_context_->createUnboundBuffer(p, bytes ? bytes : 1);
    buf->send(peer, kP2PSlotBase | tag);
    FLOTILLA_CHECK(buf->waitSend(options_.timeout), DeadlineExceeded, "gloo send on rank ", rank_,
                   " to rank ", peer, " did not complete within ", options_.timeout.count(), "ms");
  });
}

void GlooBackend::recv(void* data, size_t bytes, int peer, uint32_t tag) {
  FLOTILLA_ENFORCE(peer >= 0 && peer < size_ && peer != rank_, "recv from invalid peer ", peer);
  char dummy = 0;
  void* p = bytes ? data : &dummy;
  Guard("recv", [&] {
    auto buf = unbound_context_->createUnboundBuffer(p, bytes ? bytes : 1);
    buf->recv(peer, kP2PSlotBase | tag);
    FLOTILLA_CHECK(buf->waitRecv(options_.timeout), DeadlineExceeded, "gloo recv on rank ", rank_,
                   " from rank ", peer, " did not complete within ", options_.timeout.count(),
                   "ms");
  });
}

}  // namespace flotilla::comm::gloo_backend
