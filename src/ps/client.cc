#include "flotilla/ps/client.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>

#include "flotilla/common/enforce.h"
#include "flotilla/core/row_copy.h"
#include "ps/call_plan.h"
#include "ps/client_impl.h"
#include "ps/payload.h"
#include "ps/rpc_fanout.h"
#include "ps/rpc_trace.h"
#include "ps/wire_rows.h"

namespace flotilla::ps {

using Stub = rpc::PsService::Stub;
using Done = std::function<void(grpc::Status)>;

namespace {

const float* FloatData(const Tensor& t, const std::string& name) {
  FLOTILLA_ENFORCE(t.dtype() == DType::kFloat32, "parameter '", name, "' must be float32, got ",
                   DTypeName(t.dtype()));
  return t.data<float>();
}

// A batched dense call as traces name it: "fc_0.w_0 +3", its float bytes.
RpcTag DenseTag(std::span<const DenseVar> vars) {
  int64_t bytes = 0;
  for (const DenseVar& v : vars) bytes += v.value.numel() * static_cast<int64_t>(sizeof(float));
  if (vars.empty()) return RpcTag("", 0, 0);
  return RpcTag(vars.size() == 1 ? vars[0].name : StrCat(vars[0].name, " +", vars.size() - 1), 0,
                bytes);
}

// Per-thread messages of the sparse hot path, reused across calls: Clear()
// keeps the capacity of bytes fields and repeated elements, so steady-state
// batches refill their buffers instead of allocating (and page-faulting)
// hundreds of kilobytes per call. Returns n cleared messages.
template <typename Msg>
std::vector<Msg>& Reused(size_t n) {
  thread_local std::vector<Msg> msgs;
  msgs.resize(n);
  for (Msg& m : msgs) m.Clear();
  return msgs;
}

// Per-thread lists of the key positions each call carries, sized for
// count[c] positions (PlaceKeys fills them).
std::vector<std::vector<uint32_t>>& ReusedPositions(const std::vector<size_t>& count) {
  thread_local std::vector<std::vector<uint32_t>> positions;
  positions.resize(count.size());
  for (size_t c = 0; c < count.size(); ++c) positions[c].resize(count[c]);
  return positions;
}

// Hands one server's rows of table `name` (its reply `got`) to `sink`,
// checking them: the table asked for, `positions.size()` rows, and the
// width `dim` the other servers answered with (-1 until the first).
void DeliverRows(const std::string& ep, const std::string& name, const rpc::SparseRowsData& got,
                 std::span<const uint32_t> positions, int64_t& dim, const PsClient::RowSink& sink) {
  FLOTILLA_CHECK(got.table() == name, Internal, "parameter server ", ep, " answered a pull of '", name,
                 "' with rows of '", got.table(), "'");
  if (dim < 0) dim = got.dim();
  FLOTILLA_ENFORCE_EQ(got.dim(), dim, "sparse table '", name, "' dim differs across servers");
  auto values = AsSpan<float>(got.values(), "rows of '" + name + "'");
  FLOTILLA_ENFORCE_EQ(values.size(), positions.size() * dim, "rows of '", name, "' from ", ep);
  sink(positions, values.data(), dim);
}

// The full name of a method called with raw messages (see wire_rows.h):
// "PullSparse", "PushDelta", else "PushSparse".
const std::string& RawMethod(std::string_view method) {
  static const std::string pull = StrCat("/", rpc::PsService::service_full_name(), "/PullSparse");
  static const std::string push = StrCat("/", rpc::PsService::service_full_name(), "/PushSparse");
  static const std::string delta = StrCat("/", rpc::PsService::service_full_name(), "/PushDelta");
  return method == "PullSparse" ? pull : method == "PushDelta" ? delta : push;
}


}  // namespace

std::vector<rpc::PushDenseRequest>& PsClient::Impl::SplitDense(std::span<const DenseVar> vars,
                                                               bool with_values) const {
  auto& reqs = Reused<rpc::PushDenseRequest>(endpoints.size());
  for (const DenseVar& var : vars) {
    const float* data = with_values ? FloatData(var.value, var.name) : nullptr;
    for (const DenseBlock& b : SliceDense(var.name, var.value.numel(), endpoints.size(),
                                          var.row_width, options.min_block_size)) {
      auto* block = reqs[b.server].add_blocks();
      block->set_table(var.name);
      block->set_block_id(b.id);
      if (data) AssignBytes<float>(block->mutable_values(), {data + b.offset, size_t(b.length)});
      if (data && var.learning_rate) block->set_learning_rate(*var.learning_rate);
    }
  }
  for (auto& r : reqs) r.set_trainer_id(trainer_id);
  return reqs;
}

void PsClient::Impl::SendDense(const char* method, std::vector<rpc::PushDenseRequest>& reqs,
                               rpc::DenseWrite write) {
  std::vector<rpc::Ack> acks(reqs.size());
  std::vector<ServerCall> calls;
  const uint64_t id = NewRequestId();
  for (size_t s = 0; s < reqs.size(); ++s) {
    if (reqs[s].blocks_size() == 0) continue;
    reqs[s].set_write(write);
    reqs[s].set_request_id(id);
    calls.push_back({int(s), [req = &reqs[s], ack = &acks[s]](Stub* stub, grpc::ClientContext* ctx,
                                                             Done done) {
                       stub->async()->PushDense(ctx, req, ack, std::move(done));
                     }});
  }
  fanout.Run(method, calls);
}

PsClient::Impl::KeyRoute PsClient::Impl::Route(std::span<const int64_t> keys) const {
  const int n = static_cast<int>(endpoints.size());
  KeyRoute route;
  route.count.assign(n, 0);
  if (n == 1) {  // one server: no routing
    route.count[0] = keys.size();
    return route;
  }
  route.server.resize(keys.size());
  // The default slicer runs batched: no std::function call or division per key.
  auto* const* fn = options.slicer.target<int (*)(int64_t, int)>();
  if (fn != nullptr && *fn == &ModSlicer) {
    ModSliceBatch(keys, n, route.server);
  } else {
    for (size_t i = 0; i < keys.size(); ++i) {
      const int s = options.slicer(keys[i], n);
      FLOTILLA_ENFORCE(s >= 0 && s < n, "sparse slicer put key ", keys[i], " on server ", s,
                       ", outside [0, ", n, ")");
      route.server[i] = static_cast<uint32_t>(s);
    }
  }
  for (uint32_t s : route.server) ++route.count[s];
  return route;
}

void PsClient::Impl::SendSparse(const char* method, const std::string& name,
                                std::span<const int64_t> keys, const Tensor& values,
                                rpc::DenseWrite write, bool delta, std::optional<float> lr) {
  const RpcTag tag(name, static_cast<int64_t>(keys.size()), values.nbytes());
  const float* data = FloatData(values, name);
  const int64_t dim = keys.empty() ? 0 : values.numel() / static_cast<int64_t>(keys.size());
  FLOTILLA_ENFORCE_EQ(values.numel(), dim * static_cast<int64_t>(keys.size()), method, " '", name,
                      "': values must be [keys, dim]");
  const KeyRoute route = Route(keys);
  // One call per server: a push is one step of a server's update rule.
  const CallPlan plan = PlanCalls(route.count, SIZE_MAX, 0);
  const size_t n = plan.server.size();
  const uint64_t id = NewRequestId();
  rpc::PushSparseRequest push;
  rpc::PushDeltaRequest push_delta;
  push.set_trainer_id(trainer_id);
  push.set_write(write);
  push.set_request_id(id);
  push_delta.set_trainer_id(trainer_id);
  push_delta.set_request_id(id);
  const google::protobuf::MessageLite& head = delta ? static_cast<const google::protobuf::MessageLite&>(push_delta) : push;
  const int rows_field = delta ? int{rpc::PushDeltaRequest::kSparseFieldNumber}
                               : int{rpc::PushSparseRequest::kTablesFieldNumber};
  rpc::SparseRowsData rows_head;
  rows_head.set_table(name);
  if (lr) rows_head.set_learning_rate(*lr);
  auto& positions = ReusedPositions(plan.count);
  PlaceKeys<false>(plan, route, keys, positions, nullptr);
  // A call's keys and rows are gathered onto the wire when it is first
  // issued, so the calls already started are on their way while the next
  // one is filled.
  std::vector<std::optional<RowsRequest>> reqs(n);
  std::vector<grpc::ByteBuffer> acks(n);
  auto fill = [&](size_t c) {
    RowsRequest& req = reqs[c].emplace(head, rows_field, rows_head, plan.count[c], dim);
    char* key_out = req.keys();
    char* value_out = req.values();
    const size_t row_bytes = static_cast<size_t>(dim) * sizeof(float);
    for (uint32_t i : positions[c]) {
      std::memcpy(key_out, &keys[i], sizeof(int64_t));
      key_out += sizeof(int64_t);
      if (row_bytes == 0) continue;  // rows of width 0: no values field
      CopyRow(value_out, data + i * dim, dim);
      value_out += row_bytes;
    }
  };
  const std::string& rpc_method = RawMethod(delta ? "PushDelta" : "PushSparse");
  std::vector<ServerCall> calls;
  for (size_t c = 0; c < n; ++c) {
    calls.push_back({plan.server[c], [&, c](Stub*, grpc::ClientContext* ctx, Done done) {
                       if (!reqs[c]) fill(c);
                       fanout.raw_stub(plan.server[c]).UnaryCall(ctx, rpc_method, grpc::StubOptions(),
                                                                 &reqs[c]->buffer(), &acks[c], std::move(done));
                     }});
  }
  fanout.Run(method, calls);
}

void PsClient::Impl::PullRows(const std::string& name, std::span<const int64_t> keys,
                              const RowBytes& rows) {
  const RpcTag tag(name, static_cast<int64_t>(keys.size()),
                   static_cast<int64_t>(keys.size() * sizeof(int64_t)));
  const KeyRoute route = Route(keys);
  const CallPlan plan = PlanPull(route.count, options);
  const size_t n = plan.server.size();
  rpc::PullSparseRequest head;
  head.set_trainer_id(trainer_id);
  rpc::SparseRowsData rows_head;
  rows_head.set_table(name);
  std::vector<RowsRequest> reqs;
  std::vector<char*> key_out(n);
  for (size_t c = 0; c < n; ++c) {
    key_out[c] = reqs.emplace_back(head, rpc::PullSparseRequest::kTablesFieldNumber, rows_head,
                                   plan.count[c], 0).keys();
  }
  auto& positions = ReusedPositions(plan.count);
  PlaceKeys<true>(plan, route, keys, positions, key_out.data());
  std::vector<grpc::ByteBuffer> replies(n);
  int64_t dim = -1;
  std::vector<ServerCall> calls;
  for (size_t c = 0; c < n; ++c) {
    auto start = [&, c](Stub*, grpc::ClientContext* ctx, Done done) {
      fanout.raw_stub(plan.server[c]).UnaryCall(ctx, RawMethod("PullSparse"), grpc::StubOptions(),
                                                &reqs[c].buffer(), &replies[c], std::move(done));
    };
    auto deliver = [&, c] {
      const std::span<const uint32_t> at(positions[c]);
      ReadPulledRows(replies[c], plan.count[c], name, endpoints[plan.server[c]], dim,
                     [&](size_t first, const char* bytes, size_t count) {
                       rows(at.subspan(first, count), bytes, dim);
                     });
    };
    calls.push_back({plan.server[c], std::move(start), std::move(deliver)});
  }
  fanout.Run("PullSparse", calls);
}

// ---- PsClient ----

PsClient::PsClient(std::vector<std::string> endpoints, int trainer_id, int num_trainers,
                   PsClientOptions options) {
  FLOTILLA_ENFORCE(!endpoints.empty(), "PsClient needs at least one server endpoint");
  FLOTILLA_ENFORCE(trainer_id >= 0 && trainer_id < num_trainers, "trainer id ", trainer_id,
                   " is outside [0, ", num_trainers, ")");
  impl_ = std::make_unique<Impl>(std::move(endpoints), trainer_id, num_trainers, std::move(options));
}

PsClient::~PsClient() = default;

int PsClient::trainer_id() const { return impl_->trainer_id; }
int PsClient::num_trainers() const { return impl_->num_trainers; }
int PsClient::num_servers() const { return static_cast<int>(impl_->endpoints.size()); }
const std::vector<std::string>& PsClient::endpoints() const { return impl_->endpoints; }
const PsClientOptions& PsClient::options() const { return impl_->options; }

void PsClient::PullDense(std::span<DenseVar> vars) {
  const RpcTag tag = DenseTag(vars);
  auto& reqs = impl_->SplitDense(vars, false);
  auto& pulls = Reused<rpc::PullDenseRequest>(reqs.size());
  auto& resps = Reused<rpc::PullDenseResponse>(reqs.size());
  std::vector<ServerCall> calls;
  for (size_t s = 0; s < reqs.size(); ++s) {
    if (reqs[s].blocks_size() == 0) continue;
    pulls[s].set_trainer_id(impl_->trainer_id);
    pulls[s].mutable_blocks()->Swap(reqs[s].mutable_blocks());
    calls.push_back({int(s), [req = &pulls[s], resp = &resps[s]](Stub* stub, grpc::ClientContext* ctx,
                                                                Done done) {
                       stub->async()->PullDense(ctx, req, resp, std::move(done));
                     }});
  }
  impl_->fanout.Run("PullDense", calls);
  for (DenseVar& var : vars) {
    float* out = var.value.mutable_data<float>();
    for (const DenseBlock& b : SliceDense(var.name, var.value.numel(), num_servers(), var.row_width,
                                          impl_->options.min_block_size)) {
      const rpc::PullDenseResponse& resp = resps[b.server];
      const rpc::DenseBlockData* got = nullptr;
      for (const auto& blk : resp.blocks()) {
        if (blk.table() == var.name && blk.block_id() == b.id) got = &blk;
      }
      FLOTILLA_CHECK(got != nullptr, Internal, "parameter server ", impl_->endpoints[b.server],
                     " did not return block ", b.id, " of '", var.name, "'");
      auto values = AsSpan<float>(got->values(), "block of '" + var.name + "'");
      FLOTILLA_ENFORCE_EQ(static_cast<int64_t>(values.size()), b.length, "block ", b.id, " of '",
                          var.name, "' from ", impl_->endpoints[b.server],
                          " (server and trainer disagree on the parameter's size)");
      std::memcpy(out + b.offset, values.data(), values.size_bytes());
    }
  }
}

void PsClient::PullDense(const std::string& name, Tensor* value, int64_t row_width) {
  value->mutable_data<float>();  // allocate here so the pull fills the caller's buffer
  DenseVar var{name, *value, row_width};
  PullDense(std::span<DenseVar>(&var, 1));
}

void PsClient::PushDense(std::span<const DenseVar> grads) {
  const RpcTag tag = DenseTag(grads);
  auto& reqs = impl_->SplitDense(grads, true);
  impl_->SendDense("PushDense", reqs, rpc::GRADIENT);
}

void PsClient::PushDense(const std::string& name, const Tensor& grad, int64_t row_width) {
  DenseVar var{name, grad, row_width};
  PushDense(std::span<const DenseVar>(&var, 1));
}

void PsClient::InitDense(std::span<const DenseVar> values) {
  const RpcTag tag = DenseTag(values);
  auto& reqs = impl_->SplitDense(values, true);
  impl_->SendDense("InitDense", reqs, rpc::OVERWRITE);
}

void PsClient::PushDenseDelta(std::span<const DenseVar> deltas) {
  const RpcTag tag = DenseTag(deltas);
  auto& reqs = impl_->SplitDense(deltas, true);
  auto& dreqs = Reused<rpc::PushDeltaRequest>(reqs.size());
  const uint64_t id = impl_->NewRequestId();
  std::vector<rpc::Ack> acks(reqs.size());
  std::vector<ServerCall> calls;
  for (size_t s = 0; s < reqs.size(); ++s) {
    if (reqs[s].blocks_size() == 0) continue;
    dreqs[s].set_trainer_id(impl_->trainer_id);
    dreqs[s].set_request_id(id);
    dreqs[s].mutable_dense()->Swap(reqs[s].mutable_blocks());
    calls.push_back({int(s), [req = &dreqs[s], ack = &acks[s]](Stub* stub, grpc::ClientContext* ctx,
                                                              Done done) {
                       stub->async()->PushDelta(ctx, req, ack, std::move(done));
                     }});
  }
  impl_->fanout.Run("PushDelta", calls);
}

Tensor PsClient::PullSparse(const std::string& name, std::span<const int64_t> keys) {
  Tensor out;
  PullSparse(name, keys, &out);
  return out;
}

void PsClient::PullSparse(const std::string& name, std::span<const int64_t> keys, Tensor* out) {
  if (keys.empty()) {
    out->set_dtype(DType::kFloat32).Resize({0, 0});
    return;
  }
  float* dst = nullptr;
  impl_->PullRows(name, keys, [&](std::span<const uint32_t> positions, const char* rows, int64_t dim) {
    if (dst == nullptr) {
      dst = out->set_dtype(DType::kFloat32).Resize({int64_t(keys.size()), dim}).mutable_data<float>();
    }
    ScatterRows(positions, rows, dim, dst);
  });
}

// Rows reach the sink as floats: a run the reply holds at an address that
// is not a float's goes through an aligned buffer first.
void PsClient::PullSparse(const std::string& name, std::span<const int64_t> keys,
                          const RowSink& sink) {
  if (keys.empty()) return;
  std::vector<float> aligned;
  impl_->PullRows(name, keys, [&](std::span<const uint32_t> positions, const char* rows, int64_t dim) {
    if (reinterpret_cast<uintptr_t>(rows) % alignof(float) == 0) {
      sink(positions, reinterpret_cast<const float*>(rows), dim);
      return;
    }
    aligned.resize(positions.size() * static_cast<size_t>(dim));
    std::memcpy(aligned.data(), rows, aligned.size() * sizeof(float));
    sink(positions, aligned.data(), dim);
  });
}

void PsClient::PullSparseTables(std::span<const TablePull> pulls) {
  size_t total = 0;
  for (const TablePull& p : pulls) total += p.keys.size();
  if (total == 0) return;
  const RpcTag tag(pulls.size() == 1 ? pulls[0].table : StrCat(pulls[0].table, " +", pulls.size() - 1),
                   static_cast<int64_t>(total), static_cast<int64_t>(total * sizeof(int64_t)));
  const size_t servers = impl_->endpoints.size();
  auto& reqs = Reused<rpc::PullSparseRequest>(servers);
  auto& resps = Reused<rpc::PullSparseResponse>(servers);
  // positions[t][c]: table t's keys in its call c; parts[s]: the (table,
  // call) pairs server s's request carries, in its order.
  std::vector<std::vector<std::vector<uint32_t>>> positions(pulls.size());
  std::vector<std::vector<std::pair<size_t, size_t>>> parts(servers);
  for (size_t t = 0; t < pulls.size(); ++t) {
    const Impl::KeyRoute route = impl_->Route(pulls[t].keys);
    const CallPlan plan = PlanCalls(route.count, SIZE_MAX, SIZE_MAX);  // one call per server
    positions[t].resize(plan.server.size());
    std::vector<char*> key_out(plan.server.size());
    for (size_t c = 0; c < plan.server.size(); ++c) {
      const int s = plan.server[c];
      positions[t][c].resize(plan.count[c]);
      rpc::SparseRowsData* rows = reqs[s].add_tables();
      rows->set_table(pulls[t].table);
      key_out[c] = reinterpret_cast<char*>(ResizeAs<int64_t>(rows->mutable_keys(), plan.count[c]).data());
      parts[s].emplace_back(t, c);
    }
    PlaceKeys<true>(plan, route, pulls[t].keys, positions[t], key_out.data());
  }
  std::vector<int64_t> dims(pulls.size(), -1);
  std::vector<ServerCall> calls;
  for (size_t s = 0; s < servers; ++s) {
    if (parts[s].empty()) continue;
    reqs[s].set_trainer_id(impl_->trainer_id);
    auto start = [req = &reqs[s], resp = &resps[s]](Stub* stub, grpc::ClientContext* ctx, Done done) {
      stub->async()->PullSparse(ctx, req, resp, std::move(done));
    };
    auto deliver = [&, s] {
      const std::string& ep = impl_->endpoints[s];
      FLOTILLA_CHECK(resps[s].tables_size() == static_cast<int>(parts[s].size()), Internal,
                     "parameter server ", ep, " answered PullSparse of ", parts[s].size(),
                     " tables with ", resps[s].tables_size());
      for (size_t i = 0; i < parts[s].size(); ++i) {
        const auto [t, c] = parts[s][i];
        DeliverRows(ep, pulls[t].table, resps[s].tables(static_cast<int>(i)), positions[t][c], dims[t],
                    pulls[t].sink);
      }
    };
    calls.push_back({static_cast<int>(s), std::move(start), std::move(deliver)});
  }
  impl_->fanout.Run("PullSparse", calls);
}

void PsClient::PushSparse(const std::string& name, std::span<const int64_t> keys,
                          const Tensor& grads, std::optional<float> lr) {
  impl_->SendSparse("PushSparse", name, keys, grads, rpc::GRADIENT, false, lr);
}

void PsClient::PushSparse(const std::string& name, const SelectedRows& grads,
                          std::optional<float> lr) {
  PushSparse(name, grads.rows(), grads.value(), lr);
}

void PsClient::InitSparse(const std::string& name, std::span<const int64_t> keys,
                          const Tensor& values) {
  impl_->SendSparse("InitSparse", name, keys, values, rpc::OVERWRITE, false);
}

void PsClient::PushSparseDelta(const std::string& name, std::span<const int64_t> keys,
                               const Tensor& deltas) {
  impl_->SendSparse("PushDelta", name, keys, deltas, rpc::GRADIENT, true);
}

std::future<void> PsClient::PushDenseAsync(std::vector<DenseVar> grads) {
  return std::async(std::launch::async, [this, grads = std::move(grads)] { PushDense(grads); });
}

std::future<void> PsClient::PushSparseAsync(std::string name, std::vector<int64_t> keys,
                                            Tensor grads) {
  return std::async(std::launch::async, [this, name = std::move(name), keys = std::move(keys),
                                         grads = std::move(grads)] { PushSparse(name, keys, grads); });
}

std::future<Tensor> PsClient::PullSparseAsync(std::string name, std::vector<int64_t> keys) {
  return std::async(std::launch::async, [this, name = std::move(name), keys = std::move(keys)] {
    return PullSparse(name, keys);
  });
}

std::string PsClient::Echo(int server, const std::string& payload, int64_t reply_bytes) {
  FLOTILLA_ENFORCE(server >= 0 && server < num_servers(), "Echo: server ", server, " out of range");
  rpc::EchoMessage req, resp;
  req.set_payload(payload);
  if (reply_bytes >= 0) req.set_reply_bytes(reply_bytes);
  std::vector<ServerCall> calls{{server, [&](Stub* stub, grpc::ClientContext* ctx, Done done) {
                                   stub->async()->Echo(ctx, &req, &resp, std::move(done));
                                 }}};
  impl_->fanout.Run("Echo", calls);
  return std::move(*resp.mutable_payload());
}

void PsClient::EchoAll(const std::string& payload, int64_t reply_bytes) {
  // One request per server, each with its own copy (what a client sending
  // different bytes to each server has to build), in reused messages like
  // the sparse calls': the baseline pays no allocation those do not.
  auto& reqs = Reused<rpc::EchoMessage>(2 * num_servers());
  rpc::EchoMessage* resps = reqs.data() + num_servers();
  std::vector<ServerCall> calls;
  for (int s = 0; s < num_servers(); ++s) {
    reqs[s].set_payload(payload);
    reqs[s].set_reply_bytes(reply_bytes);
    calls.push_back({s, [req = &reqs[s], resp = &resps[s]](Stub* stub, grpc::ClientContext* ctx, Done done) {
                       stub->async()->Echo(ctx, req, resp, std::move(done));
                     }});
  }
  impl_->fanout.Run("Echo", calls);
}

}  // namespace flotilla::ps
