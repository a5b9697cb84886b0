// The gRPC service behind PsServer: decodes requests, checks the token,
// calls the tables, and maps flotilla::Error to gRPC status codes.
#pragma once

#include "flotilla/common/error.h"
#include "ps/ps.grpc.pb.h"
#include "ps/server_state.h"

namespace flotilla::ps {

// Metadata key carrying the token: not the shared secret itself but
// WireToken(secret), so a request seen on a plaintext channel reveals
// neither the job secret nor what the store's challenge-response demands.
inline constexpr char kTokenMetadata[] = "flotilla-ps-token";
// DeriveToken(token, "flotilla-ps-token"); "" for an empty token.
std::string WireToken(const std::string& token);

grpc::StatusCode StatusCodeOf(ErrorCode code);

// PullSparse and PushSparse are served on gRPC's callback API with raw
// messages: a pull's rows go straight into the reply's bytes (see
// wire_rows.h), and both run on the thread that read the request, without
// a hop to the synchronous pool (table calls never wait for other calls:
// they hold shard locks briefly, or read an ssd table's database). Their
// typed handlers serve the same
// requests to callers that hold messages (the fuzz harness).
class PsServiceImpl final
    : public rpc::PsService::WithRawCallbackMethod_PullSparse<
          rpc::PsService::WithRawCallbackMethod_PushSparse<rpc::PsService::Service>> {
 public:
  explicit PsServiceImpl(PsServer::State* state) : state_(state) {}

  grpc::Status PullDense(grpc::ServerContext*, const rpc::PullDenseRequest*,
                         rpc::PullDenseResponse*) override;
  grpc::Status PushDense(grpc::ServerContext*, const rpc::PushDenseRequest*, rpc::Ack*) override;
  grpc::Status PullSparse(grpc::ServerContext*, const rpc::PullSparseRequest*,
                          rpc::PullSparseResponse*) override;
  grpc::ServerUnaryReactor* PullSparse(grpc::CallbackServerContext*, const grpc::ByteBuffer*,
                                       grpc::ByteBuffer*) override;
  grpc::Status PushSparse(grpc::ServerContext*, const rpc::PushSparseRequest*, rpc::Ack*) override;
  grpc::ServerUnaryReactor* PushSparse(grpc::CallbackServerContext*, const grpc::ByteBuffer*,
                                       grpc::ByteBuffer*) override;
  grpc::Status PushDelta(grpc::ServerContext*, const rpc::PushDeltaRequest*, rpc::Ack*) override;
  grpc::Status Barrier(grpc::ServerContext*, const rpc::BarrierRequest*, rpc::Ack*) override;
  grpc::Status Save(grpc::ServerContext*, const rpc::PathRequest*, rpc::Ack*) override;
  grpc::Status Load(grpc::ServerContext*, const rpc::PathRequest*, rpc::Ack*) override;
  grpc::Status Shrink(grpc::ServerContext*, const rpc::TrainerRequest*, rpc::ShrinkResponse*) override;
  grpc::Status TrainerFinished(grpc::ServerContext*, const rpc::TrainerRequest*, rpc::Ack*) override;
  grpc::Status Stop(grpc::ServerContext*, const rpc::TrainerRequest*, rpc::Ack*) override;
  grpc::Status Echo(grpc::ServerContext*, const rpc::EchoMessage*, rpc::EchoMessage*) override;

 private:
  // Runs fn after the token check, turning exceptions into a status.
  // Context: grpc::ServerContext or grpc::CallbackServerContext.
  template <typename Context, typename Fn>
  grpc::Status Guarded(Context* ctx, Fn&& fn);
  // PERMISSION_DENIED for a request from `peer` without the token; counts and logs it.
  grpc::Status Refuse(const std::string& peer);
  // Every table's rows of a pull into `resp`; a push's rows into the
  // tables (once per request id). After the token check.
  void PullTables(const rpc::PullSparseRequest& req, rpc::PullSparseResponse* resp);
  void PushTables(const rpc::PushSparseRequest& req);

  PsServer::State* state_;  // not owned; outlives the service
};

}  // namespace flotilla::ps
