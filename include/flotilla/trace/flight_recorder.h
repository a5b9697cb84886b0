// FlightRecorder: the last N (default 2,000; FLOTILLA_FLIGHT_RECORDER_SIZE,
// 0 turns it off) collectives and parameter-server calls of this process, in
// a ring, always on. When the job hangs or fails, the records are dumped into
// the log dir (see DumpFlight) and `flotilla doctor` reads them: which
// collective each rank is in, which server a trainer waits for.
//
//   uint64_t id = FlightRecorder::Get().Add(record);   // queued or started
//   FlightRecorder::Get().MarkStarted(id);  ...  MarkEnded(id, ok);
//
// Thread-safe (one short lock per call: collectives and calls last far
// longer). Updates to a record already pushed out of the ring are ignored.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "flotilla/trace/names.h"

namespace flotilla::trace {

enum class FlightType : uint8_t { kCollective, kRpc };
enum class FlightState : uint8_t { kQueued, kStarted, kDone, kFailed };
const char* FlightTypeName(FlightType t);
const char* FlightStateName(FlightState s);

struct FlightRecord {
  uint64_t id = 0;  // set by Add: process-wide record number, from 1
  FlightType type = FlightType::kCollective;
  FlightState state = FlightState::kQueued;
  NameId kind = kNoName;       // "allreduce", ... / RPC method "PullSparse"
  NameId group = kNoName;      // collective: process group; rpc: table ("" = none)
  NameId where = kNoName;      // collective: backend (shm/gloo/hierarchical); rpc: endpoint
  int32_t comm = 0;            // collective: communicator; rpc: server index
  int32_t rank = 0;            // collective: this rank; rpc: this trainer
  int32_t participants = 0;    // collective: group size; rpc: servers in the call
  int32_t bucket = -1;         // fused gradient bucket, -1 = none
  uint64_t seq = 0;            // collective: number on its communicator, from 1
  int64_t bytes = 0;
  int64_t keys = 0;            // rpc: sparse keys
  int64_t step = -1;           // the process's step when issued (-1: take it from activity.h)
  NameId op = kNoName;         // the op running when issued
  int64_t enqueue_ns = 0;      // MonoNs(); 0 = not reached
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

class FlightRecorder {
 public:
  static FlightRecorder& Get();
  explicit FlightRecorder(size_t capacity);

  // Stores `record` (enqueue_ns defaults to now) and returns its id; 0 when
  // the recorder is off.
  uint64_t Add(FlightRecord record);
  void MarkStarted(uint64_t id);
  // ok = false marks the record failed and requests a dump ("failure").
  void MarkEnded(uint64_t id, bool ok);

  // The records in the ring, oldest first.
  std::vector<FlightRecord> Snapshot() const;
  // The oldest record not yet ended, if any.
  bool OldestPending(FlightRecord* out) const;
  size_t capacity() const { return ring_.size(); }

 private:
  FlightRecord* Find(uint64_t id);  // requires mu_

  mutable std::mutex mu_;
  std::vector<FlightRecord> ring_;  // guarded by mu_
  uint64_t next_id_ = 1;            // guarded by mu_
};

// RAII for one record: Add at construction (started unless `queued`),
// MarkEnded(ok) at End() or destruction (failed when unwinding).
class FlightScope {
 public:
  explicit FlightScope(const FlightRecord& record, bool queued = false);
  ~FlightScope();
  FlightScope(const FlightScope&) = delete;
  FlightScope& operator=(const FlightScope&) = delete;
  void Start();
  void End(bool ok);
  uint64_t id() const { return id_; }

 private:
  uint64_t id_;
  bool ended_ = false;
  int uncaught_;
};

}  // namespace flotilla::trace
