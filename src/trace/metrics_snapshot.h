// Metrics snapshots: once a second the trace thread appends one JSON line
// with this process's key figures to FLOTILLA_METRICS_DIR/<label>.jsonl —
// the dashboard's series, live and after the job. Private to trace.
//
// A line: {"t": wall ms, "label", "step", "steps", "samples", "loss",
//   "step_s": [count, sum], "compute_s", "comm_s", "rss",
//   "coll": {kind: [count, sum_s, bytes]}, "rpc": {method: [count, sum_s]},
//   "served": {method: [count, sum_s]}, "pending": what is pending (or null),
//   "op": the op running (or "")}
// Cumulative values: readers difference consecutive lines.
#pragma once

#include <string>

namespace flotilla::trace {

// No-op without FLOTILLA_METRICS_DIR. Trace thread (and exit) only.
void WriteMetricsSnapshot();
// The line itself (for tests and the launcher's own file).
std::string MetricsSnapshotLine();

}  // namespace flotilla::trace
