#include "flotilla/launch/dashboard.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"
#include "flotilla/common/job_secret.h"
#include "flotilla/common/strings.h"
#include "flotilla/trace/clock.h"
#include "flotilla/trace/doctor.h"
#include "flotilla/trace/process_info.h"
#include "launch/dashboard_assets.h"

namespace flotilla::launch {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr size_t kSeriesPoints = 120;  // two minutes of snapshots
constexpr size_t kTailLines = 6;

// The last `n` lines of a file, read from at most its last `max_bytes`.
std::vector<std::string> TailLines(const std::string& path, size_t n, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const std::streamoff size = in.tellg();
  const std::streamoff from =
      std::max<std::streamoff>(0, size - static_cast<std::streamoff>(max_bytes));
  in.seekg(from);
  std::string text(static_cast<size_t>(size - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  std::vector<std::string> lines;
  size_t end = text.size();
  while (end > 0 && lines.size() < n + 1) {
    size_t start = text.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    if (end > start) lines.push_back(text.substr(start, end - start));
    if (start == 0) break;
    end = start - 1;
  }
  if (from > 0 && !lines.empty() && lines.size() > n) lines.pop_back();  // maybe cut
  std::reverse(lines.begin(), lines.end());
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<long>(n));
  return lines;
}

json Num(double v) { return json(v); }

double Get(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0;
}

// A figure in milliseconds, or null when the snapshot lacks it.
json Ms(const json& j, const char* key) {
  return j.contains(key) ? Num(Get(j, key) * 1000) : json(nullptr);
}

// Sum over the entries of a {name: [count, sum, ...]} map.
std::pair<double, double> CountSum(const json& j, const char* key) {
  double count = 0, sum = 0;
  if (!j.contains(key) || !j[key].is_object()) return {0, 0};
  for (const auto& [name, v] : j[key].items()) {
    count += v.at(0).get<double>();
    sum += v.at(1).get<double>();
  }
  return {count, sum};
}

// Rates from consecutive cumulative snapshots.
json Series(const std::vector<json>& snaps) {
  json s = {{"t", json::array()}, {"step", json::array()}, {"samples_per_sec", json::array()},
            {"loss", json::array()}, {"step_ms", json::array()}, {"compute_ms", json::array()},
            {"comm_ms", json::array()}, {"rpc_ms", json::array()}};
  for (size_t i = 1; i < snaps.size(); ++i) {
    const json& a = snaps[i - 1];
    const json& b = snaps[i];
    const double dt = (Get(b, "t") - Get(a, "t")) / 1000;
    if (dt <= 0) continue;
    s["t"].push_back(b["t"]);
    s["step"].push_back(b.value("step", 0));
    s["samples_per_sec"].push_back(Num((Get(b, "samples") - Get(a, "samples")) / dt));
    s["loss"].push_back(b.contains("loss") ? b["loss"] : json(nullptr));
    const double steps = Get(b, "step_count") - Get(a, "step_count");
    s["step_ms"].push_back(steps > 0 ? Num((Get(b, "step_sum") - Get(a, "step_sum")) / steps * 1000)
                                     : json(nullptr));
    s["compute_ms"].push_back(Ms(b, "compute_s"));
    s["comm_ms"].push_back(Ms(b, "comm_s"));
    const auto [c0, s0] = CountSum(a, "rpc");
    const auto [c1, s1] = CountSum(b, "rpc");
    s["rpc_ms"].push_back(c1 > c0 ? Num((s1 - s0) / (c1 - c0) * 1000) : json(nullptr));
  }
  return s;
}

std::vector<json> Snapshots(const std::string& path) {
  std::vector<json> out;
  for (const std::string& line : TailLines(path, kSeriesPoints + 1, 1 << 20)) {
    json j = json::parse(line, nullptr, false);
    if (j.is_object()) out.push_back(std::move(j));
  }
  return out;
}

json Processes(const std::string& log_dir) {
  const std::string path = log_dir + "/job_status.json";
  if (FileExists(path)) {
    json status = json::parse(ReadFile(path), nullptr, false);
    if (status.is_object() && status.contains("processes")) return status["processes"];
  }
  // Without a status file (a job not started by flotilla launch): whoever
  // left metrics.
  json out = json::array();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(log_dir + "/metrics", ec)) {
    if (e.path().extension() != ".jsonl") continue;
    const auto snaps = Snapshots(e.path().string());
    if (snaps.empty()) continue;
    const trace::ProcessInfo info = trace::ParseLabel(snaps.back().value("label", ""));
    out.push_back({{"label", info.label}, {"role", info.role}, {"id", info.id}, {"pid", 0},
                   {"state", "exited"}, {"status", "unknown"}, {"log", ""}});
  }
  return out;
}

json Process(const std::string& log_dir, const json& p, bool all_logs) {
  json row = p;
  const std::string label = p.value("label", "");
  const std::string stem = trace::ParseLabel(label).file_stem();
  row["stem"] = stem;
  const auto snaps = Snapshots(log_dir + "/metrics/" + stem + ".jsonl");
  row["series"] = Series(snaps);
  const json last = snaps.empty() ? json::object() : snaps.back();
  row["step"] = last.contains("step") ? last["step"] : json(nullptr);
  row["loss"] = last.contains("loss") ? last["loss"] : json(nullptr);
  const json& sps = row["series"]["samples_per_sec"];
  row["samples_per_sec"] = sps.empty() ? json(nullptr) : sps.back();
  const bool live = p.value("state", "") == "running";
  row["pending"] = live && last.contains("pending") ? last["pending"] : json(nullptr);
  row["op"] = live ? last.value("op", "") : "";
  const std::string log = p.value("log", "");
  row["log_tail"] = all_logs || WorldReadable(log) ? TailLines(log, kTailLines, 16384)
                                                   : std::vector<std::string>{};
  return row;
}

// The doctor runs when something looks wrong: a process failed or stopped,
// one waits in a collective or call, or a stall was reported.
json Diagnosis(const std::string& log_dir, const json& rows) {
  bool wrong = false;
  for (const json& r : rows) {
    const std::string state = r.value("state", "");
    wrong |= state == "failed" || state == "stopped" || !r["pending"].is_null();
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(log_dir + "/flight", ec)) {
    wrong |= e.path().extension() == ".stalled";
  }
  if (!wrong) return json::array();
  return trace::Diagnose(log_dir).findings;
}

}  // namespace

json DashboardState(const std::string& log_dir, bool all_logs) {
  json rows = json::array();
  for (const json& p : Processes(log_dir)) rows.push_back(Process(log_dir, p, all_logs));
  return {{"updated_ms", trace::WallNs() / 1000000},
          {"log_dir", log_dir},
          {"diagnosis", Diagnosis(log_dir, rows)},
          {"processes", std::move(rows)}};
}

std::string DashboardToken(std::string_view secret) {
  return DeriveToken(secret, "flotilla dashboard");
}

std::string DashboardLoginUrl(const std::string& url, const DashboardAccess& access) {
  return access.open ? url + "/" : url + "/login?token=" + access.token;
}

bool WorldReadable(const std::string& path) {
  struct stat st {};
  if (path.empty() || lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if ((st.st_mode & S_IROTH) == 0) return false;
  for (fs::path dir = fs::path(path).parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (stat(dir.c_str(), &st) != 0 || (st.st_mode & S_IXOTH) == 0) return false;
    if (dir == dir.root_path()) break;
  }
  return true;
}

namespace {

constexpr char kCookie[] = "flotilla_dashboard";

// The token the request presents: its cookie, else its bearer header.
std::string Presented(const trace::HttpRequest& req) {
  if (auto it = req.headers.find("cookie"); it != req.headers.end()) {
    for (std::string part : Split(it->second, ';')) {
      while (!part.empty() && part.front() == ' ') part.erase(0, 1);
      if (part.rfind(StrCat(kCookie, "="), 0) == 0) return part.substr(sizeof kCookie);
    }
  }
  if (auto it = req.headers.find("authorization"); it != req.headers.end()) {
    if (it->second.rfind("Bearer ", 0) == 0) return it->second.substr(7);
  }
  return "";
}

trace::HttpReply Refused(int status, const std::string& why) {
  return {status, "text/plain; charset=utf-8", why + "\n", {}};
}

const char kNeedToken[] =
    "the dashboard's state and logs need its token: open the login URL the launcher printed "
    "(.../login?token=...), or send \"Authorization: Bearer TOKEN\" (docs/security.md)";

}  // namespace

void ServeDashboard(trace::HttpServer& http, const std::string& log_dir,
                    const DashboardAccess& access) {
  auto authorized = [token = access.token](const trace::HttpRequest& req) {
    const std::string presented = Presented(req);
    return !token.empty() && !presented.empty() && SecretEquals(presented, token);
  };
  const bool open = access.open;
  http.Handle("/", [](const trace::HttpRequest&) {
    return trace::HttpReply{200, "text/html; charset=utf-8", std::string(DashboardPage()), {}};
  });
  http.Handle("/chart.js", [](const trace::HttpRequest&) {
    return trace::HttpReply{200, "application/javascript", std::string(ChartJs()), {}};
  });
  http.Handle("/login", [token = access.token](const trace::HttpRequest& req) {
    auto it = req.query.find("token");
    if (token.empty() || it == req.query.end() || !SecretEquals(it->second, token)) {
      return Refused(401, "wrong or missing token");
    }
    return trace::HttpReply{303, "text/plain; charset=utf-8", "logged in\n",
                            {{"Location", "/"},
                             {"Set-Cookie", StrCat(kCookie, "=", token,
                                                   "; Path=/; HttpOnly; SameSite=Strict")}}};
  });
  http.Handle("/api/state", [log_dir, authorized, open](const trace::HttpRequest& req) {
    const bool full = authorized(req);
    if (!full && !open) return Refused(401, kNeedToken);
    return trace::HttpReply{200, "application/json", DashboardState(log_dir, full).dump(), {}};
  });
  // Only logs the status file lists: the name is a label, never a path.
  http.Handle("/log/([A-Za-z0-9_]+)", [log_dir, authorized, open](const trace::HttpRequest& req) {
    const bool full = authorized(req);
    if (!full && !open) return Refused(401, kNeedToken);
    const std::string stem = req.path.substr(req.path.rfind('/') + 1);
    for (const json& p : Processes(log_dir)) {
      if (trace::ParseLabel(p.value("label", "")).file_stem() != stem) continue;
      const std::string log = p.value("log", "");
      if (log.empty() || !FileExists(log)) break;
      if (!full && !WorldReadable(log)) {
        return Refused(403, StrCat("the log of '", stem, "' is not readable by every local user; "
                                   "the dashboard's token shows it"));
      }
      std::string text;
      for (const std::string& line : TailLines(log, 100000, 4 << 20)) text += line + "\n";
      return trace::HttpReply{200, "text/plain; charset=utf-8", text, {}};
    }
    return Refused(404, "no log for '" + stem + "'");
  });
}

}  // namespace flotilla::launch
