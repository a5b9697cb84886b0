// RpcFanout: runs one RPC per server in parallel (gRPC callback API), with a
// deadline per attempt and bounded retries of UNAVAILABLE, and turns the
// first failure into a flotilla::Error naming the server's endpoint; that
// failure cancels the calls still in flight.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "flotilla/ps/client.h"
#include "ps/ps.grpc.pb.h"

namespace flotilla::ps {

// One server's part of a fanned-out call. `start` issues the RPC on the
// stub (or on RpcFanout::raw_stub of the same server) with the given context and must arrange for `done` to be called
// exactly once (the callback API does). It may be called again on retry;
// response messages are overwritten by each attempt. `on_ok`, when set,
// runs on the waiting thread as soon as this call succeeded, while the
// others may still be in flight (a pull scatters one server's rows while
// the next server's are on the wire); an exception it throws ends the
// fan-out like a failed call (the others are cancelled) and is rethrown.
struct ServerCall {
  int server = 0;
  std::function<void(rpc::PsService::Stub*, grpc::ClientContext*,
                     std::function<void(grpc::Status)> done)> start;
  std::function<void()> on_ok = nullptr;
};

class RpcFanout {
 public:
  RpcFanout(const std::vector<std::string>& endpoints, const PsClientOptions& options);
  ~RpcFanout();

  // Blocks until every call succeeded; throws as described above. `method`
  // names the call in error messages. Thread-safe.
  void Run(const char* method, const std::vector<ServerCall>& calls,
           std::chrono::milliseconds attempt_timeout) const;
  void Run(const char* method, const std::vector<ServerCall>& calls) const {
    Run(method, calls, options_.rpc_timeout);
  }
  const std::string& endpoint(int server) const { return endpoints_[server]; }
  // The server's channel for calls whose messages the caller encodes and
  // decodes itself (see wire_rows.h). Thread-safe.
  grpc::GenericStub& raw_stub(int server) const { return *raw_stubs_[server]; }

 private:
  struct Outcome {
    grpc::Status status;
    int attempts = 0;
  };
  struct Round;  // one Run in progress (rpc_fanout.cc)

  std::unique_ptr<grpc::ClientContext> NewContext(std::chrono::milliseconds timeout) const;
  // Run's steps. The lock is the round's mutex, held on entry and exit.
  void Issue(Round& round, size_t i) const;
  void AwaitAll(Round& round, std::unique_lock<std::mutex>& lock) const;
  void Settle(Round& round, size_t i, std::unique_lock<std::mutex>& lock) const;
  void ReissueDue(Round& round, std::unique_lock<std::mutex>& lock) const;
  static void CancelAndDrain(Round& round, std::unique_lock<std::mutex>& lock);
  [[noreturn]] void Report(const char* method, Round& round) const;
  // Throws the Error matching `outcome`; `others` (from Describe) names the
  // other servers that failed in the same attempt.
  [[noreturn]] void Throw(const char* method, const ServerCall& call, const Outcome& outcome,
                          std::chrono::milliseconds attempt_timeout,
                          const std::string& others) const;
  std::string Describe(const ServerCall& call, const Outcome& outcome) const;

  std::vector<std::string> endpoints_;
  PsClientOptions options_;
  std::string wire_token_;  // WireToken(options_.token), sent with every call
  std::vector<std::unique_ptr<rpc::PsService::Stub>> stubs_;
  std::vector<std::unique_ptr<grpc::GenericStub>> raw_stubs_;  // on the same channels
};

}  // namespace flotilla::ps
