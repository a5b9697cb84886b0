#include "ps/rpc_trace.h"

#include "flotilla/common/enforce.h"
#include "flotilla/trace/flight_recorder.h"
#include "flotilla/trace/process_info.h"
#include "flotilla/trace/standard_metrics.h"
#include "flotilla/trace/track.h"

namespace flotilla::ps {

namespace {
thread_local const RpcTag* t_tag = nullptr;
}  // namespace

RpcTag::RpcTag(const std::string& table, int64_t keys, int64_t bytes)
    : previous_(t_tag), table_(trace::Intern(table)), keys_(keys), bytes_(bytes) {
  t_tag = this;
}

RpcTag::~RpcTag() { t_tag = previous_; }

FanoutTrace::FanoutTrace(const char* method, const std::vector<ServerCall>& calls,
                         const std::vector<std::string>& endpoints)
    : method_(trace::Intern(method)), endpoints_(endpoints), calls_(calls.size()),
      start_ns_(trace::MonoNs()) {
  for (const ServerCall& c : calls) servers_.push_back(c.server);
  if (t_tag) {
    table_ = t_tag->table_;
    keys_ = t_tag->keys_;
    bytes_ = t_tag->bytes_;
  }
  span_.emplace(trace::Category::kRpc, method_);
  span_->ArgName("table", table_).Arg("keys", keys_).Arg("bytes", bytes_)
      .Arg("servers", static_cast<int64_t>(calls.size()));
}

FanoutTrace::~FanoutTrace() {
  span_.reset();
  trace::RecordRpc(method_, table_, bytes_,
                   static_cast<double>(trace::MonoNs() - start_ns_) / 1e9, !failed_);
  for (size_t i = 0; i < calls_.size(); ++i) {
    // Calls cancelled after another failed end here, failed.
    if (!calls_[i].done && calls_[i].flight_id) Finished(i, false);
  }
}

// One row per server (and per part, when a call is split over several
// calls to one server), per calling thread: their spans never overlap.
uint32_t FanoutTrace::Row(size_t i) const {
  int part = 0;
  for (size_t j = 0; j < i; ++j) part += servers_[j] == servers_[i];
  return trace::Track(StrCat("rpc → ", endpoints_[servers_[i]], part ? StrCat(" #", part) : "",
                             " (thread ", trace::CurrentThreadRow(), ")"));
}

void FanoutTrace::Issued(size_t i) {
  Call& c = calls_[i];
  if (c.attempts++ > 0) return;
  c.issued_ns = trace::MonoNs();
  trace::FlightRecord r;
  r.type = trace::FlightType::kRpc;
  r.state = trace::FlightState::kStarted;
  r.kind = method_;
  r.group = table_;
  r.where = trace::Intern(endpoints_[servers_[i]]);
  r.comm = servers_[i];
  r.rank = trace::Self().id;
  r.participants = static_cast<int32_t>(servers_.size());
  r.keys = keys_;
  r.bytes = bytes_;
  r.enqueue_ns = r.start_ns = c.issued_ns;
  c.flight_id = trace::FlightRecorder::Get().Add(r);
}

void FanoutTrace::Finished(size_t i, bool ok) {
  Call& c = calls_[i];
  if (c.done) return;
  c.done = true;
  failed_ |= !ok;
  trace::FlightRecorder::Get().MarkEnded(c.flight_id, ok);
  if (!trace::Enabled()) return;
  trace::Span call(trace::Category::kRpcCall, method_);
  call.StartedAt(c.issued_ns).OnTrack(Row(i)).Arg("server", servers_[i])
      .ArgName("table", table_).Arg("attempts", c.attempts).Arg("ok", ok ? 1 : 0);
}

ServedCall::ServedCall(const char* method, const std::string& table, int trainer)
    : method_(trace::Intern(method)), table_(trace::Intern(table)), start_ns_(trace::MonoNs()),
      span_(trace::Category::kServe, method_) {
  thread_local bool named = false;
  if (!named) {
    trace::SetThreadName("rpc handler");
    named = true;
  }
  span_.ArgName("table", table_).Arg("trainer", trainer);
}

ServedCall::~ServedCall() {
  trace::RecordServed(method_, table_, static_cast<double>(trace::MonoNs() - start_ns_) / 1e9);
}

}  // namespace flotilla::ps
