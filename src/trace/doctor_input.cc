#include "trace/doctor_input.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "flotilla/common/file_util.h"

namespace flotilla::trace {

namespace fs = std::filesystem;

namespace {

DumpedRecord ParseRecord(const nlohmann::json& j) {
  DumpedRecord r;
  r.type = j.value("type", "");
  r.state = j.value("state", "");
  r.kind = j.value("kind", "");
  r.seq = j.value("seq", uint64_t{0});
  r.bytes = j.value("bytes", int64_t{0});
  r.group = j.value("group", "");
  r.backend = j.value("backend", "");
  r.comm = j.value("comm", 0);
  r.rank = j.value("rank", 0);
  r.participants = j.value("participants", 0);
  r.bucket = j.value("bucket", -1);
  r.table = j.value("table", "");
  r.endpoint = j.value("endpoint", "");
  r.server = j.value("server", 0);
  r.trainer = j.value("trainer", 0);
  r.keys = j.value("keys", int64_t{0});
  r.step = j.value("step", int64_t{-1});
  r.op = j.value("op", "");
  r.enqueue_ns = j.value("enqueue_ns", int64_t{0});
  r.start_ns = j.value("start_ns", int64_t{0});
  r.end_ns = j.value("end_ns", int64_t{0});
  return r;
}

// The last non-empty line of a log (read from its last 8 KB).
std::string LastLine(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - 8192);
  in.seekg(from);
  std::string tail(static_cast<size_t>(size - from), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r' || tail.back() == ' ')) {
    tail.pop_back();
  }
  const size_t nl = tail.rfind('\n');
  return nl == std::string::npos ? tail : tail.substr(nl + 1);
}

void ReadStatus(const std::string& log_dir, DoctorInput& in) {
  const std::string path = log_dir + "/job_status.json";
  if (!FileExists(path)) return;
  try {
    const auto j = nlohmann::json::parse(ReadFile(path));
    for (const auto& p : j.at("processes")) {
      ProcessStatus s;
      s.label = p.value("label", "");
      s.role = p.value("role", "");
      s.id = p.value("id", 0);
      s.pid = p.value("pid", 0);
      s.endpoint = p.value("endpoint", "");
      s.log = p.value("log", "");
      s.state = p.value("state", "");
      s.status = p.value("status", "");
      if (!s.log.empty()) in.last_log_line[s.label] = LastLine(s.log);
      in.status[s.label] = s;
    }
  } catch (const std::exception& e) {
    in.notes.push_back(path + " is unreadable: " + e.what());
  }
}

}  // namespace

ProcessDump ParseDump(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  ProcessDump d;
  d.label = j.value("label", "");
  d.role = j.value("role", "");
  d.reason = j.value("reason", "");
  d.host = j.value("host", "");
  d.op = j.value("op", "");
  d.op_output = j.value("op_output", "");
  d.id = j.value("id", 0);
  d.pid = j.value("pid", 0);
  d.mono_ns = j.value("mono_ns", int64_t{0});
  d.wall_minus_mono_ns = j.value("wall_minus_mono_ns", int64_t{0});
  d.op_since_ns = j.value("op_since_ns", int64_t{0});
  d.step = j.value("step", int64_t{0});
  d.in_op = j.value("in_op", false);
  for (const auto& r : j.value("records", nlohmann::json::array())) {
    d.records.push_back(ParseRecord(r));
  }
  return d;
}

DoctorInput ReadDoctorInput(const std::string& log_dir) {
  DoctorInput in;
  ReadStatus(log_dir, in);
  const fs::path flight = fs::path(log_dir) / "flight";
  std::error_code ec;
  if (!fs::is_directory(flight, ec)) {
    in.notes.push_back("no flight-recorder dumps in " + flight.string());
    return in;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(flight, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 12 && name.ends_with(".flight.json")) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    try {
      in.dumps.push_back(ParseDump(ReadFile(f.string())));
    } catch (const std::exception& e) {
      in.notes.push_back(f.string() + " is unreadable: " + e.what());
    }
  }
  return in;
}

}  // namespace flotilla::trace
