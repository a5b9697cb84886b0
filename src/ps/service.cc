#include "ps/service.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "flotilla/common/enforce.h"
#include "flotilla/common/job_secret.h"
#include "flotilla/common/logging.h"
#include "flotilla/trace/standard_metrics.h"
#include "ps/payload.h"
#include "ps/rpc_trace.h"
#include "ps/wire_rows.h"

namespace flotilla::ps {

grpc::StatusCode StatusCodeOf(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorCode::kNotFound: return grpc::StatusCode::NOT_FOUND;
    case ErrorCode::kAlreadyExists: return grpc::StatusCode::ALREADY_EXISTS;
    case ErrorCode::kUnavailable: return grpc::StatusCode::ABORTED;  // not retried by clients
    case ErrorCode::kDeadlineExceeded: return grpc::StatusCode::DEADLINE_EXCEEDED;
    case ErrorCode::kCorruption: return grpc::StatusCode::DATA_LOSS;
    case ErrorCode::kUnimplemented: return grpc::StatusCode::UNIMPLEMENTED;
    case ErrorCode::kInternal: return grpc::StatusCode::INTERNAL;
    case ErrorCode::kCancelled: return grpc::StatusCode::CANCELLED;
  }
  return grpc::StatusCode::INTERNAL;
}

std::string WireToken(const std::string& token) {
  return DeriveToken(token, "flotilla-ps-token");
}

// Logged at the 1st, 10th, 100th... refusal: a misconfigured trainer retries.
grpc::Status PsServiceImpl::Refuse(const std::string& peer) {
  const int64_t n = ++state_->refused;
  trace::RecordAuthRefusal("ps");
  int64_t p = 1;
  while (p < n) p *= 10;
  if (p == n) {
    log::Warn("parameter server {}: refused {} at {} (missing or wrong job secret; {} so far)",
              state_->options.server_index, peer, state_->options.endpoint, n);
  }
  return {grpc::StatusCode::PERMISSION_DENIED,
          StrCat("request from ", peer, " refused by parameter server ",
                 state_->options.server_index,
                 ": missing or wrong parameter-server token (the job secret: "
                 "FLOTILLA_JOB_SECRET_FILE / FLOTILLA_JOB_SECRET must be the servers')")};
}

namespace {

// Runs `fn` on the path of `dir` through its descriptor (SafeDir::ProcPath):
// nothing under it is reached through a link swapped in after the check.
// Errors name the directory as the trainer asked for it.
template <typename Fn>
void OnConfinedDir(const SafeDir& dir, Fn&& fn) {
  try {
    fn(dir.ProcPath());
  } catch (const Error& e) {
    std::string text = std::string(e.what()).substr(std::strlen(ErrorCodeName(e.code())) + 2);
    for (size_t at = text.find(dir.ProcPath()); at != std::string::npos;
         at = text.find(dir.ProcPath(), at + dir.path().size())) {
      text.replace(at, dir.ProcPath().size(), dir.path());
    }
    throw Error(e.code(), text);
  }
}

}  // namespace

template <typename Context, typename Fn>
grpc::Status PsServiceImpl::Guarded(Context* ctx, Fn&& fn) {
  const std::string& token = state_->wire_token;
  if (!token.empty()) {
    auto it = ctx->client_metadata().find(kTokenMetadata);
    const bool ok = it != ctx->client_metadata().end() &&
                    SecretEquals(std::string_view(it->second.data(), it->second.size()), token);
    if (!ok) return Refuse(ctx->peer());
  }
  try {
    fn();
    return grpc::Status::OK;
  } catch (const Error& e) {
    return {StatusCodeOf(e.code()), e.what()};
  } catch (const std::exception& e) {
    return {grpc::StatusCode::INTERNAL, e.what()};
  }
}

namespace {

std::string What(const std::string& table, int block) {
  return StrCat("dense table '", table, "' block ", block);
}

// The first table a request names ("" for none), for traces.
template <typename Items>
const std::string& FirstTable(const Items& items) {
  static const std::string none;
  return items.empty() ? none : items.begin()->table();
}

template <typename Data>
std::optional<float> RateOf(const Data& in) {
  if (!in.has_learning_rate()) return std::nullopt;
  return in.learning_rate();
}

}  // namespace

grpc::Status PsServiceImpl::PullDense(grpc::ServerContext* ctx, const rpc::PullDenseRequest* req,
                                      rpc::PullDenseResponse* resp) {
  const ServedCall served("PullDense", FirstTable(req->blocks()), req->trainer_id());
  return Guarded(ctx, [&] {
    for (const auto& in : req->blocks()) {
      DenseTable& table = state_->Dense(in.table());
      auto* out = resp->add_blocks();
      out->set_table(in.table());
      out->set_block_id(in.block_id());
      const int64_t length = table.block(in.block_id()).length;
      table.Pull(in.block_id(), ResizeAs<float>(out->mutable_values(), length));
    }
  });
}

grpc::Status PsServiceImpl::PushDense(grpc::ServerContext* ctx, const rpc::PushDenseRequest* req,
                                      rpc::Ack*) {
  const ServedCall served("PushDense", FirstTable(req->blocks()), req->trainer_id());
  return Guarded(ctx, [&] {
    if (!state_->dedup.FirstTime(req->request_id())) return;  // a retry of an applied push
    const bool sync = state_->options.mode == PsMode::kSync;
    for (const auto& in : req->blocks()) {
      DenseTable& table = state_->Dense(in.table());
      auto values = AsSpan<float>(in.values(), What(in.table(), in.block_id()));
      if (req->write() == rpc::OVERWRITE) {
        table.Set(in.block_id(), values);
      } else if (sync) {
        table.Accumulate(in.block_id(), values, RateOf(in));
      } else {
        table.Push(in.block_id(), values, RateOf(in));
      }
    }
  });
}

grpc::Status PsServiceImpl::PullSparse(grpc::ServerContext* ctx, const rpc::PullSparseRequest* req,
                                       rpc::PullSparseResponse* resp) {
  const ServedCall served("PullSparse", FirstTable(req->tables()), req->trainer_id());
  return Guarded(ctx, [&] { PullTables(*req, resp); });
}

void PsServiceImpl::PullTables(const rpc::PullSparseRequest& req, rpc::PullSparseResponse* resp) {
  for (const auto& in : req.tables()) {
    SparseTable& table = state_->Sparse(in.table());
    auto keys = AsSpan<int64_t>(in.keys(), "sparse table '" + in.table() + "' keys");
    auto* out = resp->add_tables();
    out->set_table(in.table());
    out->set_dim(table.dim());
    table.Pull(keys, ResizeAs<float>(out->mutable_values(), keys.size() * table.dim()));
  }
}

namespace {

// Serves a call of the callback API: its request parsed as Req, then
// handle(req) gives the status the call finishes with. The request is
// parsed into this thread's message of the last call: its bytes fields
// keep their capacity, so a batch's keys and rows land in memory that is
// mapped and warm instead of fresh strings of hundreds of kilobytes.
template <typename Req, typename Handle>
grpc::ServerUnaryReactor* ServeRaw(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request,
                                   Handle&& handle) {
  thread_local Req req;
  grpc::ByteBuffer bytes(*request);  // shares the slices; Deserialize consumes its argument
  grpc::Status status = grpc::SerializationTraits<Req>::Deserialize(&bytes, &req);
  if (status.ok()) status = handle(req);
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

// `msg` serialised into *reply when `status` is OK; the status.
template <typename Msg>
grpc::Status ReplyWith(grpc::Status status, const Msg& msg, grpc::ByteBuffer* reply) {
  bool own = false;
  return status.ok() ? grpc::SerializationTraits<Msg>::Serialize(msg, reply, &own) : status;
}

}  // namespace

// One table (every PsClient::PullSparse): its rows go straight into the
// reply's bytes. Several (PullSparseTables): the typed handler's reply,
// serialised.
grpc::ServerUnaryReactor* PsServiceImpl::PullSparse(grpc::CallbackServerContext* ctx,
                                                     const grpc::ByteBuffer* request,
                                                     grpc::ByteBuffer* reply) {
  return ServeRaw<rpc::PullSparseRequest>(ctx, request, [&](const rpc::PullSparseRequest& req) {
    const ServedCall served("PullSparse", FirstTable(req.tables()), req.trainer_id());
    rpc::PullSparseResponse typed;
    const grpc::Status status = Guarded(ctx, [&] {
      if (req.tables_size() != 1) return PullTables(req, &typed);
      const rpc::SparseRowsData& in = req.tables(0);
      SparseTable& table = state_->Sparse(in.table());
      auto keys = AsSpan<int64_t>(in.keys(), "sparse table '" + in.table() + "' keys");
      PulledRowsReply rows(in.table(), keys.size(), table.dim());
      table.Pull(keys, rows.rows());
      *reply = std::move(rows.buffer());
    });
    return req.tables_size() == 1 ? status : ReplyWith(status, typed, reply);
  });
}

grpc::Status PsServiceImpl::PushSparse(grpc::ServerContext* ctx, const rpc::PushSparseRequest* req,
                                       rpc::Ack*) {
  const ServedCall served("PushSparse", FirstTable(req->tables()), req->trainer_id());
  return Guarded(ctx, [&] { PushTables(*req); });
}

grpc::ServerUnaryReactor* PsServiceImpl::PushSparse(grpc::CallbackServerContext* ctx,
                                                     const grpc::ByteBuffer* request,
                                                     grpc::ByteBuffer* reply) {
  return ServeRaw<rpc::PushSparseRequest>(ctx, request, [&](const rpc::PushSparseRequest& req) {
    const ServedCall served("PushSparse", FirstTable(req.tables()), req.trainer_id());
    return ReplyWith(Guarded(ctx, [&] { PushTables(req); }), rpc::Ack(), reply);
  });
}

void PsServiceImpl::PushTables(const rpc::PushSparseRequest& req) {
  if (!state_->dedup.FirstTime(req.request_id())) return;  // a retry of an applied push
  const bool sync = state_->options.mode == PsMode::kSync;
  for (const auto& in : req.tables()) {
    SparseTable& table = state_->Sparse(in.table());
    const std::string what = "sparse table '" + in.table() + "'";
    auto keys = AsSpan<int64_t>(in.keys(), what + " keys");
    auto values = AsSpan<float>(in.values(), what + " values");
    if (req.write() == rpc::OVERWRITE) {
      table.Set(keys, values);
    } else if (sync) {
      table.Accumulate(keys, values, RateOf(in));
    } else {
      table.Push(keys, values, RateOf(in));
    }
  }
}

grpc::Status PsServiceImpl::PushDelta(grpc::ServerContext* ctx, const rpc::PushDeltaRequest* req,
                                      rpc::Ack*) {
  const ServedCall served("PushDelta", FirstTable(req->sparse()), req->trainer_id());
  return Guarded(ctx, [&] {
    if (!state_->dedup.FirstTime(req->request_id())) return;  // a retry of an applied push
    for (const auto& in : req->dense()) {
      state_->Dense(in.table()).PushDelta(
          in.block_id(), AsSpan<float>(in.values(), What(in.table(), in.block_id())));
    }
    for (const auto& in : req->sparse()) {
      const std::string what = "sparse table '" + in.table() + "'";
      state_->Sparse(in.table()).PushDelta(AsSpan<int64_t>(in.keys(), what + " keys"),
                                           AsSpan<float>(in.values(), what + " values"));
    }
  });
}

grpc::Status PsServiceImpl::Barrier(grpc::ServerContext* ctx, const rpc::BarrierRequest* req,
                                    rpc::Ack*) {
  const ServedCall served("Barrier", "", req->trainer_id());
  return Guarded(ctx, [&] {
    state_->barrier.Arrive(req->trainer_id(), state_->options.barrier_timeout);
  });
}

grpc::Status PsServiceImpl::Save(grpc::ServerContext* ctx, const rpc::PathRequest* req, rpc::Ack*) {
  return Guarded(ctx, [&] {
    const bool create_parents = !req->parent_must_exist();
    const SafeDir dir = state_->ConfinedDir(req->dir(), /*create=*/true, create_parents);
    OnConfinedDir(dir, [&](const std::string& path) { state_->Save(path, dir.path()); });
  });
}

grpc::Status PsServiceImpl::Load(grpc::ServerContext* ctx, const rpc::PathRequest* req, rpc::Ack*) {
  return Guarded(ctx, [&] {
    const SafeDir dir = state_->ConfinedDir(req->dir(), /*create=*/false, /*create_parents=*/false);
    OnConfinedDir(dir, [&](const std::string& path) { state_->Load(path, dir.path()); });
  });
}

grpc::Status PsServiceImpl::Shrink(grpc::ServerContext* ctx, const rpc::TrainerRequest*,
                                   rpc::ShrinkResponse* resp) {
  return Guarded(ctx, [&] {
    const auto [dropped, rows] = state_->Shrink();
    resp->set_dropped(dropped);
    resp->set_rows(rows);
  });
}

grpc::Status PsServiceImpl::TrainerFinished(grpc::ServerContext* ctx,
                                            const rpc::TrainerRequest* req, rpc::Ack*) {
  return Guarded(ctx, [&] {
    log::Info("parameter server {}: trainer {} finished", state_->options.server_index,
              req->trainer_id());
    if (state_->barrier.Finish(req->trainer_id())) state_->RequestStop();
  });
}

grpc::Status PsServiceImpl::Stop(grpc::ServerContext* ctx, const rpc::TrainerRequest* req,
                                 rpc::Ack*) {
  return Guarded(ctx, [&] { state_->RequestStop(); });
}

grpc::Status PsServiceImpl::Echo(grpc::ServerContext* ctx, const rpc::EchoMessage* req,
                                 rpc::EchoMessage* resp) {
  return Guarded(ctx, [&] {
    if (!req->has_reply_bytes()) {
      *resp->mutable_payload() = req->payload();
      return;
    }
    const int64_t limit = state_->options.max_message_bytes - 64;  // room for framing
    FLOTILLA_ENFORCE(req->reply_bytes() >= 0 && req->reply_bytes() <= limit, "Echo reply of ", req->reply_bytes(),
                     " bytes asked; replies are limited to ", limit);
    std::string* out = resp->mutable_payload();
    out->assign(req->payload(), 0, std::min<size_t>(req->payload().size(), req->reply_bytes()));
    out->resize(req->reply_bytes());
  });
}

}  // namespace flotilla::ps
