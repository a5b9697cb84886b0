#include "comm/collective_trace.h"

#include "flotilla/trace/collective_tag.h"
#include "flotilla/trace/standard_metrics.h"

namespace flotilla::comm {

CollectiveTrace::CollectiveTrace(const CollectiveSite& site, int comm, uint64_t seq,
                                 CollectiveOp op)
    : site_(&site), comm_(comm), seq_(seq), op_(op), bucket_(trace::CurrentBucket()),
      issued_ns_(trace::MonoNs()) {
  trace::FlightRecord r;
  r.type = trace::FlightType::kCollective;
  r.kind = op.kind;
  r.group = site.group;
  r.where = site.backend;
  r.comm = comm;
  r.rank = site.rank;
  r.participants = site.size;
  r.bucket = bucket_;
  r.seq = seq;
  r.bytes = op.bytes;
  r.enqueue_ns = issued_ns_;
  flight_id_ = trace::FlightRecorder::Get().Add(r);
}

void CollectiveTrace::Start() {
  started_ns_ = trace::MonoNs();
  trace::FlightRecorder::Get().MarkStarted(flight_id_);
  if (!trace::Enabled()) return;
  span_.emplace(trace::Category::kCollective, op_.kind);
  span_->Arg("seq", int64_t(seq_)).Arg("bytes", op_.bytes).Arg("bucket", bucket_)
      .Arg("comm", comm_).ArgName("group", site_->group).ArgName("backend", site_->backend)
      .Arg("queued_us", (started_ns_ - issued_ns_) / 1000);
}

void CollectiveTrace::End(bool ok) {
  span_.reset();
  trace::FlightRecorder::Get().MarkEnded(flight_id_, ok);
  trace::RecordCollective(op_.kind, op_.bytes,
                          static_cast<double>(trace::MonoNs() - started_ns_) / 1e9);
}

}  // namespace flotilla::comm
