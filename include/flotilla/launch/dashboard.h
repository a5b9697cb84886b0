// The job dashboard: a live page served by the launcher (--dashboard) or,
// after the job, by `flotilla dashboard LOG_DIR`, built from the files in
// the log dir only — job_status.json (every process's state), metrics/*.jsonl
// (one snapshot per process per second), the worker logs and the
// flight-recorder dumps (the doctor's diagnosis) — so the live and the
// after-the-fact pages are the same.
//
// Routes: /            the page (polls /api/state every second)
//         /chart.js    Chart.js (Debian libjs-chart.js, embedded at build time)
//         /login?token=T  sets the token as a cookie, then back to /
//         /api/state   everything the page shows, as JSON       (token)
//         /log/<label> a process's whole log ("rank0", "server1") (token)
//
// The state and the logs show command lines, pids and endpoints, so they ask
// for the dashboard token (DashboardToken): cookie flotilla_dashboard=T or
// "Authorization: Bearer T"; 401 without it. With DashboardAccess::open they
// are served without it, except a log other local users could not read
// (not o+r, or under a directory without o+x): 403 (docs/security.md).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "flotilla/trace/http_server.h"

namespace flotilla::launch {

// Who may see the state and the logs.
struct DashboardAccess {
  std::string token;  // what a client presents; DashboardToken(secret)
  bool open = false;  // --dashboard_open: no token needed (world-readable logs only)
};

// The dashboard's token of a job: HMAC-SHA256 of "flotilla dashboard" keyed
// by `secret` (the job secret, or a random one), as 64 hex digits.
std::string DashboardToken(std::string_view secret);

// "URL/login?token=T": what the launcher prints on its own terminal.
std::string DashboardLoginUrl(const std::string& url, const DashboardAccess& access);

// Adds the routes to `http` (before http.Start()). `log_dir` absolute.
void ServeDashboard(trace::HttpServer& http, const std::string& log_dir,
                    const DashboardAccess& access);

// True when every local user may read `path`: a regular file (not a link)
// with o+r under directories that all have o+x.
bool WorldReadable(const std::string& path);

// /api/state: {"updated_ms", "log_dir", "diagnosis": [...], "processes": [
//   {"label", "role", "id", "pid", "state", "status", "endpoint", "log",
//    "step", "samples_per_sec", "loss", "pending", "op", "log_tail": [...],
//    "series": {"t", "step", "samples_per_sec", "loss", "step_ms",
//               "compute_ms", "comm_ms", "rpc_ms"}}]}
// Without `all_logs`, log_tail is empty for a log that is not WorldReadable.
nlohmann::json DashboardState(const std::string& log_dir, bool all_logs = true);

}  // namespace flotilla::launch
