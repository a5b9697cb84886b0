// The job dashboard: a live page served by the launcher (--dashboard) or,
// after the job, by `flotilla dashboard LOG_DIR`, built from the files in
// the log dir only — job_status.json (every process's state), metrics/*.jsonl
// (one snapshot per process per second), the worker logs and the
// flight-recorder dumps (the doctor's diagnosis) — so the live and the
// after-the-fact pages are the same.
//
// Routes: /            the page (polls /api/state every second)
//         /chart.js    Chart.js (Debian libjs-chart.js, embedded at build time)
//         /api/state   everything the page shows, as JSON
//         /log/<label> a process's whole log ("rank0", "server1")
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "flotilla/trace/http_server.h"

namespace flotilla::launch {

// Adds the routes to `http` (before http.Start()). `log_dir` absolute.
void ServeDashboard(trace::HttpServer& http, const std::string& log_dir);

// /api/state: {"updated_ms", "log_dir", "diagnosis": [...], "processes": [
//   {"label", "role", "id", "pid", "state", "status", "endpoint", "log",
//    "step", "samples_per_sec", "loss", "pending", "op", "log_tail": [...],
//    "series": {"t", "step", "samples_per_sec", "loss", "step_ms",
//               "compute_ms", "comm_ms", "rpc_ms"}}]}
nlohmann::json DashboardState(const std::string& log_dir);

}  // namespace flotilla::launch
