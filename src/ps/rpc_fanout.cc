#include "ps/rpc_fanout.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <optional>
#include <mutex>
#include <thread>

#include "flotilla/common/enforce.h"
#include "ps/credentials.h"
#include "ps/rpc_status.h"
#include "ps/rpc_trace.h"
#include "ps/service.h"

namespace flotilla::ps {

using Clock = std::chrono::steady_clock;

namespace {

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& endpoint,
                                          const PsClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  // Reconnect quickly: a server that restarts is found again within ~1 s.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return grpc::CreateCustomChannel(endpoint, ChannelCredentials(options.tls), args);
}

// Why a server that is up may still be unreachable: the two sides
// disagree on TLS.
std::string TlsHint(const TlsFiles& tls) {
  if (!tls.enabled()) {
    return StrCat(" (this client is plaintext: a server that serves TLS refuses it; set ",
                  kTlsCaEnv, ", ", kTlsCertEnv, " and ", kTlsKeyEnv, " as the servers have them)");
  }
  return StrCat(" (this client uses TLS: a plaintext server, one whose certificate ", kTlsCaEnv,
                " did not sign or that does not name the address dialled, or one that "
                "refuses this client's certificate, is unreachable too)");
}

}  // namespace

RpcFanout::RpcFanout(const std::vector<std::string>& endpoints, const PsClientOptions& options)
    : endpoints_(endpoints), options_(options), wire_token_(WireToken(options.token)) {
  for (const auto& ep : endpoints_) {
    auto channel = MakeChannel(ep, options_);
    stubs_.push_back(rpc::PsService::NewStub(channel));
    raw_stubs_.push_back(std::make_unique<grpc::GenericStub>(channel));
  }
}

RpcFanout::~RpcFanout() = default;

namespace {

// The progress of one call of a fan-out. Only the waiting thread touches
// it; completions arrive through FanoutEvents.
struct CallSlot {
  std::unique_ptr<grpc::ClientContext> ctx;  // of the attempt in flight or last finished
  bool in_flight = false;
  Clock::time_point retry_at = Clock::time_point::max();  // max: no retry due
  std::chrono::milliseconds backoff{50};
};

// Completed calls, handed from gRPC's threads to the waiting one.
struct FanoutEvents {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<size_t> finished;  // guarded by mu
};

}  // namespace

std::unique_ptr<grpc::ClientContext> RpcFanout::NewContext(std::chrono::milliseconds timeout) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
  if (!wire_token_.empty()) ctx->AddMetadata(kTokenMetadata, wire_token_);
  return ctx;
}

// Every call runs in parallel. A call that finds its server unavailable is
// retried after a backoff (50 ms, doubling to 1 s) within retry_timeout
// and max_attempts, while the others stay in flight. The first call that
// fails for good cancels the others, so a trainer blocked in one server's
// barrier is not left waiting when another server is gone.
void RpcFanout::Run(const char* method, const std::vector<ServerCall>& calls,
                    std::chrono::milliseconds attempt_timeout) const {
  const size_t n = calls.size();
  std::vector<Outcome> outcomes(n);
  std::vector<CallSlot> slots(n);
  FanoutEvents events;
  FanoutTrace traced(method, calls, endpoints_);
  auto issue = [&](size_t i) {
    traced.Issued(i);
    slots[i].ctx = NewContext(attempt_timeout);
    slots[i].in_flight = true;
    ++outcomes[i].attempts;
    auto done = [&events, &outcomes, i](grpc::Status st) {
      std::lock_guard<std::mutex> lock(events.mu);
      outcomes[i].status = std::move(st);
      events.finished.push_back(i);
      events.cv.notify_all();
    };
    calls[i].start(stubs_[calls[i].server].get(), slots[i].ctx.get(), std::move(done));
  };
  for (size_t i = 0; i < n; ++i) issue(i);
  const auto give_up = Clock::now() + options_.retry_timeout;
  size_t ok = 0;
  std::optional<size_t> fatal;
  std::exception_ptr sink_error;  // thrown by an on_ok
  std::unique_lock<std::mutex> lock(events.mu);
  while (ok < n && !fatal) {
    auto due = Clock::time_point::max();
    for (const CallSlot& slot : slots) due = std::min(due, slot.retry_at);
    auto arrived = [&] { return !events.finished.empty(); };
    if (due == Clock::time_point::max()) {
      events.cv.wait(lock, arrived);
    } else {
      events.cv.wait_until(lock, due, arrived);
    }
    while (!events.finished.empty()) {
      const size_t i = events.finished.front();
      events.finished.pop_front();
      CallSlot& slot = slots[i];
      slot.in_flight = false;
      const Outcome& o = outcomes[i];
      if (o.status.ok()) {
        ++ok;
        if (calls[i].on_ok && !fatal) {
          lock.unlock();  // completions of the other calls go on meanwhile
          try {
            calls[i].on_ok();
          } catch (...) {
            sink_error = std::current_exception();
            fatal = i;
          }
          lock.lock();
        }
        if (!fatal || *fatal != i) traced.Finished(i, true);
      } else if (o.status.error_code() == grpc::StatusCode::UNAVAILABLE &&
                 o.attempts < options_.max_attempts && Clock::now() + slot.backoff < give_up) {
        slot.retry_at = Clock::now() + slot.backoff;
        slot.backoff = std::min(slot.backoff * 2, std::chrono::milliseconds(1000));
      } else if (!fatal) {
        fatal = i;
      }
    }
    for (size_t i = 0; i < n && !fatal; ++i) {
      if (slots[i].retry_at > Clock::now()) continue;
      slots[i].retry_at = Clock::time_point::max();
      lock.unlock();  // a call may complete inline and take the lock
      issue(i);
      lock.lock();
    }
  }
  if (!fatal) return;
  // Cancel what is still in flight and wait for it: the calls reference
  // this frame's outcomes and contexts.
  for (CallSlot& slot : slots) {
    if (slot.in_flight) slot.ctx->TryCancel();
  }
  auto any_in_flight = [&] {
    return std::any_of(slots.begin(), slots.end(), [](const CallSlot& s) { return s.in_flight; });
  };
  while (any_in_flight()) {
    events.cv.wait(lock, [&] { return !events.finished.empty(); });
    while (!events.finished.empty()) {
      slots[events.finished.front()].in_flight = false;
      events.finished.pop_front();
    }
  }
  if (sink_error) {
    lock.unlock();
    std::rethrow_exception(sink_error);
  }
  std::string others;
  for (size_t i = 0; i < n; ++i) {
    const grpc::StatusCode code = outcomes[i].status.error_code();
    if (i == *fatal || code == grpc::StatusCode::OK || code == grpc::StatusCode::CANCELLED) continue;
    others += Describe(calls[i], outcomes[i]);
  }
  lock.unlock();
  traced.Finished(*fatal, false);
  Throw(method, calls[*fatal], outcomes[*fatal], attempt_timeout, others);
}

std::string RpcFanout::Describe(const ServerCall& call, const Outcome& o) const {
  return StrCat("; also parameter server ", call.server, " at ", endpoints_[call.server],
                " (gRPC code ", static_cast<int>(o.status.error_code()), "): ",
                o.status.error_message());
}

void RpcFanout::Throw(const char* method, const ServerCall& call, const Outcome& o,
                      std::chrono::milliseconds attempt_timeout, const std::string& others) const {
  RpcFailureDetail detail;
  detail.retries = StrCat(", gave up after ", o.attempts, " attempts within ",
                          options_.retry_timeout.count(), " ms");
  detail.deadline = StrCat("within ", attempt_timeout.count(), " ms");
  detail.unreachable_hint = TlsHint(options_.tls);
  detail.also = others;
  ThrowRpcStatus(o.status, StrCat("parameter server ", call.server, " at ", endpoints_[call.server]),
                 method, detail);
}

}  // namespace flotilla::ps
