#include "ps/rpc_fanout.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "flotilla/common/enforce.h"
#include "ps/credentials.h"
#include "ps/rpc_status.h"
#include "ps/rpc_trace.h"
#include "ps/service.h"

namespace flotilla::ps {

using Clock = std::chrono::steady_clock;

namespace {

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
    auto channel = NewChannel(ep, options_.tls, options_.max_message_bytes);
    stubs_.push_back(rpc::PsService::NewStub(channel));
    raw_stubs_.push_back(std::make_unique<grpc::GenericStub>(channel));
  }
}

RpcFanout::~RpcFanout() = default;

namespace {

// The progress of one call of a fan-out. Only the waiting thread touches
// it; completions arrive through the round's events.
struct CallSlot {
  std::unique_ptr<grpc::ClientContext> ctx;  // of the attempt in flight or last finished
  bool in_flight = false;
  Clock::time_point retry_at = Clock::time_point::max();  // max: no retry due
  std::chrono::milliseconds backoff{50};
};

}  // namespace

// One Run in progress, on Run's stack: gRPC's threads push the indices of
// finished calls onto `finished` (under mu) and write their outcomes; every
// other field belongs to the waiting thread. The calls reference this
// frame, so a round ends only when none is in flight.
struct RpcFanout::Round {
  Round(const char* method, const std::vector<ServerCall>& calls,
        const std::vector<std::string>& endpoints, std::chrono::milliseconds attempt_timeout)
      : calls(calls), outcomes(calls.size()), slots(calls.size()), traced(method, calls, endpoints),
        attempt_timeout(attempt_timeout) {}

  bool AnyInFlight() const {
    return std::any_of(slots.begin(), slots.end(), [](const CallSlot& s) { return s.in_flight; });
  }
  Clock::time_point NextRetry() const {
    auto due = Clock::time_point::max();
    for (const CallSlot& slot : slots) due = std::min(due, slot.retry_at);
    return due;
  }

  const std::vector<ServerCall>& calls;
  std::vector<Outcome> outcomes;
  std::vector<CallSlot> slots;
  FanoutTrace traced;
  std::chrono::milliseconds attempt_timeout;
  Clock::time_point give_up;
  size_t ok = 0;
  std::optional<size_t> fatal;    // the call that failed for good
  std::exception_ptr sink_error;  // thrown by an on_ok
  std::mutex mu;
  std::condition_variable cv;
  std::deque<size_t> finished;  // guarded by mu
};

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
  Round round(method, calls, endpoints_, attempt_timeout);
  for (size_t i = 0; i < calls.size(); ++i) Issue(round, i);
  round.give_up = Clock::now() + options_.retry_timeout;
  std::unique_lock<std::mutex> lock(round.mu);
  AwaitAll(round, lock);
  if (!round.fatal) return;
  CancelAndDrain(round, lock);
  lock.unlock();
  if (round.sink_error) std::rethrow_exception(round.sink_error);
  Report(method, round);
}

void RpcFanout::Issue(Round& round, size_t i) const {
  round.traced.Issued(i);
  CallSlot& slot = round.slots[i];
  slot.ctx = NewContext(round.attempt_timeout);
  slot.in_flight = true;
  ++round.outcomes[i].attempts;
  auto done = [&round, i](grpc::Status st) {
    std::lock_guard<std::mutex> lock(round.mu);
    round.outcomes[i].status = std::move(st);
    round.finished.push_back(i);
    round.cv.notify_all();
  };
  const ServerCall& call = round.calls[i];
  call.start(stubs_[call.server].get(), slot.ctx.get(), std::move(done));
}

void RpcFanout::AwaitAll(Round& round, std::unique_lock<std::mutex>& lock) const {
  while (round.ok < round.calls.size() && !round.fatal) {
    const auto due = round.NextRetry();
    auto arrived = [&] { return !round.finished.empty(); };
    if (due == Clock::time_point::max()) {
      round.cv.wait(lock, arrived);
    } else {
      round.cv.wait_until(lock, due, arrived);
    }
    while (!round.finished.empty()) {
      const size_t i = round.finished.front();
      round.finished.pop_front();
      Settle(round, i, lock);
    }
    ReissueDue(round, lock);
  }
}

// A finished call: success (its on_ok runs, unlocked, while the others go
// on), a retry scheduled for UNAVAILABLE within the limits, or the round's
// fatal failure.
void RpcFanout::Settle(Round& round, size_t i, std::unique_lock<std::mutex>& lock) const {
  CallSlot& slot = round.slots[i];
  slot.in_flight = false;
  const Outcome& o = round.outcomes[i];
  if (o.status.ok()) {
    ++round.ok;
    const ServerCall& call = round.calls[i];
    if (call.on_ok && !round.fatal) {
      lock.unlock();
      try {
        call.on_ok();
      } catch (...) {
        round.sink_error = std::current_exception();
        round.fatal = i;
      }
      lock.lock();
    }
    if (!round.fatal || *round.fatal != i) round.traced.Finished(i, true);
  } else if (o.status.error_code() == grpc::StatusCode::UNAVAILABLE &&
             o.attempts < options_.max_attempts && Clock::now() + slot.backoff < round.give_up) {
    slot.retry_at = Clock::now() + slot.backoff;
    slot.backoff = std::min(slot.backoff * 2, std::chrono::milliseconds(1000));
  } else if (!round.fatal) {
    round.fatal = i;
  }
}

void RpcFanout::ReissueDue(Round& round, std::unique_lock<std::mutex>& lock) const {
  for (size_t i = 0; i < round.calls.size() && !round.fatal; ++i) {
    if (round.slots[i].retry_at > Clock::now()) continue;
    round.slots[i].retry_at = Clock::time_point::max();
    lock.unlock();  // a call may complete inline and take the lock
    Issue(round, i);
    lock.lock();
  }
}

// Cancels what is still in flight and waits for it: the calls reference
// the round's outcomes and contexts.
void RpcFanout::CancelAndDrain(Round& round, std::unique_lock<std::mutex>& lock) {
  for (CallSlot& slot : round.slots) {
    if (slot.in_flight) slot.ctx->TryCancel();
  }
  while (round.AnyInFlight()) {
    round.cv.wait(lock, [&] { return !round.finished.empty(); });
    while (!round.finished.empty()) {
      round.slots[round.finished.front()].in_flight = false;
      round.finished.pop_front();
    }
  }
}

// Throws the fatal call's error, naming the other servers that failed too.
void RpcFanout::Report(const char* method, Round& round) const {
  const size_t fatal = *round.fatal;
  std::string others;
  for (size_t i = 0; i < round.calls.size(); ++i) {
    const grpc::StatusCode code = round.outcomes[i].status.error_code();
    if (i == fatal || code == grpc::StatusCode::OK || code == grpc::StatusCode::CANCELLED) continue;
    others += Describe(round.calls[i], round.outcomes[i]);
  }
  round.traced.Finished(fatal, false);
  Throw(method, round.calls[fatal], round.outcomes[fatal], round.attempt_timeout, others);
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
