// MergeTimelines: the per-process timeline files of a job into one Chrome
// trace (JSON object format) that Perfetto and chrome://tracing load:
//
//  - one process row per file, named by its label ("rank 0", "server 1",
//    "launcher 0") and ordered launcher, ranks, servers;
//  - timestamps moved onto the job's reference clock by each file's
//    measured offset; otherData.clock lists every offset and its error;
//  - collectives of the same (group, communicator, sequence number) linked
//    across ranks by flow arrows, each split into "waiting for ranks" (until
//    the last rank arrived) and "transfer";
//  - files of killed processes (no closing bracket, a partial last line)
//    and ring-mode segments read as they are.
//
// Throws NotFound when no input exists, Unavailable when the output cannot
// be written (written atomically).
#pragma once

#include <string>
#include <vector>

namespace flotilla::trace {

struct MergeStats {
  int processes = 0;
  int64_t events = 0;
  int64_t flows = 0;         // collectives linked across ranks
  int64_t max_clock_error_ns = -1;  // largest measured error; -1 none measured
};

MergeStats MergeTimelines(const std::vector<std::string>& inputs, const std::string& output);

// The timeline files under `dir` (*.json and leftover *.json.seg<k>).
std::vector<std::string> TimelineFiles(const std::string& dir);

}  // namespace flotilla::trace
