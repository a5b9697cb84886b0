#include "ps/rpc_fanout.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include "flotilla/common/enforce.h"
#include "ps/service.h"

namespace flotilla::ps {

using Clock = std::chrono::steady_clock;

namespace {

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& endpoint) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // Reconnect quickly: a server that restarts is found again within ~1 s.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return grpc::CreateCustomChannel(endpoint, grpc::InsecureChannelCredentials(), args);
}

}  // namespace

RpcFanout::RpcFanout(const std::vector<std::string>& endpoints, const PsClientOptions& options)
    : endpoints_(endpoints), options_(options) {
  for (const auto& ep : endpoints_) stubs_.push_back(rpc::PsService::NewStub(MakeChannel(ep)));
}

RpcFanout::~RpcFanout() = default;

void RpcFanout::Attempt(const std::vector<ServerCall>& calls, const std::vector<size_t>& pending,
                        std::chrono::milliseconds attempt_timeout,
                        std::vector<Outcome>* outcomes) const {
  std::mutex mu;
  std::condition_variable cv;
  size_t remaining = pending.size();
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  for (size_t i : pending) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + attempt_timeout);
    if (!options_.token.empty()) ctx->AddMetadata(kTokenMetadata, options_.token);
    Outcome* out = &(*outcomes)[i];
    ++out->attempts;
    calls[i].start(stubs_[calls[i].server].get(), ctx.get(), [&, out](grpc::Status s) {
      std::lock_guard<std::mutex> lock(mu);
      out->status = std::move(s);
      if (--remaining == 0) cv.notify_all();
    });
    contexts.push_back(std::move(ctx));
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return remaining == 0; });
}

void RpcFanout::Run(const char* method, const std::vector<ServerCall>& calls,
                    std::chrono::milliseconds attempt_timeout) const {
  std::vector<Outcome> outcomes(calls.size());
  std::vector<size_t> pending(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) pending[i] = i;
  const auto give_up = Clock::now() + options_.retry_timeout;
  auto backoff = std::chrono::milliseconds(50);
  while (!pending.empty()) {
    Attempt(calls, pending, attempt_timeout, &outcomes);
    std::vector<size_t> retry, fatal;
    for (size_t i : pending) {
      const Outcome& o = outcomes[i];
      if (o.status.ok()) continue;
      const bool retryable = o.status.error_code() == grpc::StatusCode::UNAVAILABLE &&
                             o.attempts < options_.max_attempts && Clock::now() + backoff < give_up;
      (retryable ? retry : fatal).push_back(i);
    }
    if (!fatal.empty()) {
      // The first failure sets the error kind; every other failing server is named too.
      std::string others;
      for (size_t i : fatal) if (i != fatal[0]) others += Describe(calls[i], outcomes[i]);
      for (size_t i : retry) others += Describe(calls[i], outcomes[i]);
      Throw(method, calls[fatal[0]], outcomes[fatal[0]], attempt_timeout, others);
    }
    pending = std::move(retry);
    if (pending.empty()) break;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

std::string RpcFanout::Describe(const ServerCall& call, const Outcome& o) const {
  return StrCat("; also parameter server ", call.server, " at ", endpoints_[call.server],
                " (gRPC code ", static_cast<int>(o.status.error_code()), "): ",
                o.status.error_message());
}

void RpcFanout::Throw(const char* method, const ServerCall& call, const Outcome& o,
                      std::chrono::milliseconds attempt_timeout, const std::string& others) const {
  const std::string who = StrCat("parameter server ", call.server, " at ", endpoints_[call.server]);
  const std::string msg = o.status.error_message() + others;
  switch (o.status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      FLOTILLA_THROW(Unavailable, who, " is unreachable (", method, ", gave up after ", o.attempts,
                     " attempts within ", options_.retry_timeout.count(), " ms): ", msg);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      FLOTILLA_THROW(DeadlineExceeded, who, " did not complete ", method, " within ",
                     attempt_timeout.count(), " ms: ", msg);
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
                     static_cast<int>(o.status.error_code()), "): ", msg);
  }
}

}  // namespace flotilla::ps
