// What the doctor reads from a log dir, parsed into plain structs. Private
// to trace.
//
// job_status.json (written by flotilla launch while the job runs):
//   {"processes": [{"label", "role", "id", "pid", "endpoint", "log",
//                   "state": "running"|"exited"|"failed"|"stopped", "status"}]}
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace flotilla::trace {

struct DumpedRecord {
  std::string type;   // "collective" | "rpc"
  std::string state;  // "queued" | "started" | "done" | "failed"
  std::string kind;   // allreduce / PullSparse
  uint64_t seq = 0;
  int64_t bytes = 0;
  // collectives
  std::string group, backend;
  int comm = 0, rank = 0, participants = 0, bucket = -1;
  // rpc
  std::string table, endpoint;
  int server = 0, trainer = 0;
  int64_t keys = 0;
  int64_t step = -1;
  std::string op;  // the op running when it was issued
  int64_t enqueue_ns = 0, start_ns = 0, end_ns = 0;

  bool pending() const { return state == "queued" || state == "started"; }
  int64_t since_ns() const { return start_ns ? start_ns : enqueue_ns; }
};

struct ProcessDump {
  std::string label, role, reason, host, op, op_output;
  int id = 0, pid = 0;
  int64_t mono_ns = 0, wall_minus_mono_ns = 0, op_since_ns = 0, step = 0;
  bool in_op = false;
  std::vector<DumpedRecord> records;
};

struct ProcessStatus {
  std::string label, role, endpoint, log, state, status;
  int id = 0, pid = 0;
};

struct DoctorInput {
  std::vector<ProcessDump> dumps;
  std::map<std::string, ProcessStatus> status;  // by label
  std::map<std::string, std::string> last_log_line;  // by label
  std::vector<std::string> notes;
};

DoctorInput ReadDoctorInput(const std::string& log_dir);
ProcessDump ParseDump(const std::string& json_text);

}  // namespace flotilla::trace
