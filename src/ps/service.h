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

class PsServiceImpl final : public rpc::PsService::Service {
 public:
  explicit PsServiceImpl(PsServer::State* state) : state_(state) {}

  grpc::Status PullDense(grpc::ServerContext*, const rpc::PullDenseRequest*,
                         rpc::PullDenseResponse*) override;
  grpc::Status PushDense(grpc::ServerContext*, const rpc::PushDenseRequest*, rpc::Ack*) override;
  grpc::Status PullSparse(grpc::ServerContext*, const rpc::PullSparseRequest*,
                          rpc::PullSparseResponse*) override;
  grpc::Status PushSparse(grpc::ServerContext*, const rpc::PushSparseRequest*, rpc::Ack*) override;
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
  template <typename Fn>
  grpc::Status Guarded(grpc::ServerContext* ctx, Fn&& fn);
  // PERMISSION_DENIED for a request without the token; counts and logs it.
  grpc::Status Refuse(const grpc::ServerContext& ctx);

  PsServer::State* state_;  // not owned; outlives the service
};

}  // namespace flotilla::ps
