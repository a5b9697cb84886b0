// How parameter-server calls show up in traces, the flight recorder and
// metrics. Private to ps.
//
// RpcTag: a client method names the table and payload of the fan-out it is
// about to run (the fan-out sees only requests):
//   RpcTag tag(name, keys.size(), bytes);
// FanoutTrace: one fan-out — a span on the calling thread (method, table,
// keys, bytes, servers), counted as time blocked on communication; per
// server, a flight record and a span on that server's row
// ("rpc → 127.0.0.1:6171"); latency, bytes and errors by method and table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flotilla/trace/activity.h"
#include "ps/rpc_fanout.h"
#include "flotilla/trace/trace.h"

namespace flotilla::ps {

class RpcTag {
 public:
  RpcTag(const std::string& table, int64_t keys, int64_t bytes);
  ~RpcTag();
  RpcTag(const RpcTag&) = delete;
  RpcTag& operator=(const RpcTag&) = delete;

 private:
  const RpcTag* previous_;
  friend class FanoutTrace;
  trace::NameId table_;
  int64_t keys_;
  int64_t bytes_;
};

class FanoutTrace {
 public:
  // endpoints: every server's, indexed by ServerCall::server.
  FanoutTrace(const char* method, const std::vector<ServerCall>& calls,
              const std::vector<std::string>& endpoints);
  ~FanoutTrace();
  FanoutTrace(const FanoutTrace&) = delete;
  FanoutTrace& operator=(const FanoutTrace&) = delete;

  // Call i was sent (each attempt); the first attempt opens its record.
  void Issued(size_t i);
  // Call i's final outcome.
  void Finished(size_t i, bool ok);

 private:
  struct Call {
    uint64_t flight_id = 0;
    int64_t issued_ns = 0;
    int attempts = 0;
    bool done = false;
  };
  uint32_t Row(size_t i) const;

  trace::BlockedScope blocked_;
  trace::NameId method_;
  trace::NameId table_ = trace::kNoName;
  int64_t keys_ = 0;
  int64_t bytes_ = 0;
  std::vector<int> servers_;  // per call
  const std::vector<std::string>& endpoints_;
  std::vector<Call> calls_;
  int64_t start_ns_;
  bool failed_ = false;
  std::optional<trace::Span> span_;
};

// ServedCall: one call a server handles — a span on the handler thread
// (method, table, trainer) and its latency by method and table.
class ServedCall {
 public:
  ServedCall(const char* method, const std::string& table, int trainer);
  ~ServedCall();
  ServedCall(const ServedCall&) = delete;
  ServedCall& operator=(const ServedCall&) = delete;

 private:
  trace::NameId method_;
  trace::NameId table_;
  int64_t start_ns_;
  trace::Span span_;
};

}  // namespace flotilla::ps
