// CollectiveTrace: what one collective leaves behind — a flight-recorder
// record (queued → started → done/failed), a span on the thread that runs
// it (kind, bytes, seq, communicator, bucket, backend, group) after a
// "queued" span for async work, and the latency/bytes metrics. Private to
// comm; ProcessGroup makes one per collective.
#pragma once

#include <cstdint>
#include <optional>

#include "flotilla/trace/flight_recorder.h"
#include "flotilla/trace/trace.h"

namespace flotilla::comm {

// The group-wide part of every record, fixed at construction.
struct CollectiveSite {
  trace::NameId group = trace::kNoName;    // the group's store name ("fleet_dp0")
  trace::NameId backend = trace::kNoName;  // "shm" | "gloo" | "hierarchical"
  int rank = 0;
  int size = 1;
};

// One collective: kind ("allreduce", ...) and payload.
struct CollectiveOp {
  trace::NameId kind;
  int64_t bytes = 0;
};

class CollectiveTrace {
 public:
  // Records the collective as issued (queued until Start()). Reads the
  // calling thread's bucket tag.
  CollectiveTrace(const CollectiveSite& site, int comm, uint64_t seq, CollectiveOp op);
  // On the thread that runs it, just before.
  void Start();
  // After it ran; ok = false when it threw.
  void End(bool ok);
  uint64_t seq() const { return seq_; }
  int bucket() const { return bucket_; }

 private:
  const CollectiveSite* site_;
  int comm_;
  uint64_t seq_;
  CollectiveOp op_;
  int bucket_;
  uint64_t flight_id_;
  int64_t issued_ns_;
  int64_t started_ns_ = 0;
  std::optional<trace::Span> span_;
};

}  // namespace flotilla::comm
