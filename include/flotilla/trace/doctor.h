// The doctor: reads a job's log dir — every process's flight-recorder dump
// (flight/<label>.flight.json), the launcher's job_status.json and the
// worker logs — and says first what a user needs to know when a job hangs
// or dies:
//
//   allreduce #812 (bucket 3, 4.0 MB): ranks 0,1,3 waiting 30.2 s; rank 2
//   never entered — last record: allreduce #811 done, now in op mul_grad (step 97)
//
//   pserver 1 (127.0.0.1:6171) unreachable since 14:02:11; trainers 0,1
//   blocked in PullSparse table emb
//
// `flotilla doctor LOG_DIR` prints it; the launcher's ABORT message ends
// with it.
#pragma once

#include <string>
#include <vector>

namespace flotilla::trace {

struct Diagnosis {
  // What is wrong, most important first; empty when nothing is.
  std::vector<std::string> findings;
  // Per process: where it was when it dumped.
  std::vector<std::string> details;
  // Files read and their problems (unreadable dumps, no dumps at all).
  std::vector<std::string> notes;
};

// Reads `log_dir`; never throws for missing or damaged files (they become
// notes). Pending times are as of each dump.
Diagnosis Diagnose(const std::string& log_dir);

// The text `flotilla doctor` prints: findings, then details, then notes.
std::string FormatDiagnosis(const Diagnosis& d);

}  // namespace flotilla::trace
