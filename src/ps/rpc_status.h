// ThrowRpcStatus: a failed gRPC call of the parameter-server layer (a
// parameter server's or a heter worker's) as the flotilla::Error a caller
// catches, naming the peer and the method.
#pragma once

#include <string>

#include <grpcpp/grpcpp.h>

namespace flotilla::ps {

// What a caller knows about a failed call beyond its status, each part
// optional: how it retried an unreachable peer (", gave up after 3
// attempts within 2000 ms"), how long each attempt had ("within 100 ms";
// empty: "in time"), a hint after an unreachable peer's message (TLS
// settings), and text after every message (the other peers that failed).
struct RpcFailureDetail {
  std::string retries;
  std::string deadline;
  std::string unreachable_hint;
  std::string also;
};

// Throws the Error matching `status` (which must not be OK): UNAVAILABLE
// and ABORTED → Unavailable, DEADLINE_EXCEEDED → DeadlineExceeded,
// PERMISSION_DENIED and INVALID_ARGUMENT → InvalidArgument, NOT_FOUND,
// ALREADY_EXISTS, DATA_LOSS → NotFound, AlreadyExists, Corruption,
// UNIMPLEMENTED → Unimplemented, anything else → Internal with the gRPC
// code. `who` names the peer ("parameter server 1 at host:port").
[[noreturn]] void ThrowRpcStatus(const grpc::Status& status, const std::string& who,
                                 const char* method, const RpcFailureDetail& detail = {});

}  // namespace flotilla::ps
