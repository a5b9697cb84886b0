// The metrics every Flotilla process exports, behind one call per event so
// the layers that record them stay one line each. Names (Prometheus):
//   flotilla_step_seconds (histogram), flotilla_steps_total, flotilla_step,
//   flotilla_samples_total, flotilla_loss, flotilla_step_compute_seconds,
//   flotilla_step_comm_seconds (last step),
//   flotilla_collective_seconds{kind} (histogram), flotilla_collective_bytes_total{kind},
//   flotilla_rpc_seconds{method,table} (histogram), flotilla_rpc_bytes_total{method},
//   flotilla_rpc_errors_total{method},
//   flotilla_rpc_served_seconds{method,table} (histogram, servers),
//   flotilla_ps_table_rows{table} (servers), process_resident_memory_bytes,
//   flotilla_auth_refusals_total{service,reason} (peers refused or closed
//   before proving the job secret: service "store", "ps" or "elastic";
//   reason "bad_secret" for a wrong or missing one, or what the service
//   saw instead, e.g. "hello_timeout").
// Thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "flotilla/trace/names.h"

namespace flotilla::trace {

// One run of the training program: its wall time, the samples it consumed
// (first dimension of its first feed; 0 unknown), and how much of it the
// running thread spent blocked on communication.
void RecordStep(double seconds, int64_t samples, double comm_seconds);
// A fetched scalar that looks like the loss.
void RecordLoss(double value);
void RecordCollective(NameId kind, int64_t bytes, double seconds);
void RecordRpc(NameId method, NameId table, int64_t bytes, double seconds, bool ok);
void RecordServed(NameId method, NameId table, double seconds);
void SetTableRows(NameId table, int64_t rows);
// A peer refused by `service` ("store", "ps", "elastic") for `reason`:
// "bad_secret" (a wrong or missing job secret), or a store's reasons for
// closing a client before it proved the secret (docs/security.md).
void RecordAuthRefusal(std::string_view service, std::string_view reason = "bad_secret");
// Refusals recorded so far by `service` for `reason` in this process.
double AuthRefusals(std::string_view service, std::string_view reason = "bad_secret");

// A wait for input data (a reader's or DataLoader's next batch): a span on
// the waiting thread and flotilla_input_wait_seconds_total.
class InputWait {
 public:
  InputWait();
  ~InputWait();
  InputWait(const InputWait&) = delete;
  InputWait& operator=(const InputWait&) = delete;

 private:
  int64_t start_ns_;
};

}  // namespace flotilla::trace
