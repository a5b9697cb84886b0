#include "ps/rpc_status.h"

#include "flotilla/common/enforce.h"

namespace flotilla::ps {

void ThrowRpcStatus(const grpc::Status& status, const std::string& who, const char* method,
                    const RpcFailureDetail& detail) {
  const std::string msg = status.error_message() + detail.also;
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      FLOTILLA_THROW(Unavailable, who, " is unreachable (", method, detail.retries, "): ", msg,
                     detail.unreachable_hint);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      FLOTILLA_THROW(DeadlineExceeded, who, " did not complete ", method, " ",
                     detail.deadline.empty() ? "in time" : detail.deadline, ": ", msg);
    case grpc::StatusCode::PERMISSION_DENIED:
      FLOTILLA_THROW(InvalidArgument, who, " refused ", method, ": ", msg);
    case grpc::StatusCode::ABORTED:
      FLOTILLA_THROW(Unavailable, who, " aborted ", method, ": ", msg);
    case grpc::StatusCode::INVALID_ARGUMENT:
      FLOTILLA_THROW(InvalidArgument, who, " rejected ", method, ": ", msg);
    case grpc::StatusCode::NOT_FOUND:
      FLOTILLA_THROW(NotFound, who, " rejected ", method, ": ", msg);
    case grpc::StatusCode::ALREADY_EXISTS:
      FLOTILLA_THROW(AlreadyExists, who, " rejected ", method, ": ", msg);
    case grpc::StatusCode::DATA_LOSS:
      FLOTILLA_THROW(Corruption, who, " failed ", method, ": ", msg);
    case grpc::StatusCode::UNIMPLEMENTED:
      FLOTILLA_THROW(Unimplemented, who, " does not implement ", method, ": ", msg);
    default:
      FLOTILLA_THROW(Internal, who, " failed ", method, " (gRPC code ",
                     static_cast<int>(status.error_code()), "): ", msg);
  }
}

}  // namespace flotilla::ps
