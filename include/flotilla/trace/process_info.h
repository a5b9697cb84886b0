// Who this process is in the job, for timelines, flight-recorder dumps and
// metrics. flotilla launch sets FLOTILLA_TRACE_LABEL ("rank 0", "server 1");
// without it the role is read from the Paddle variables (TRAINING_ROLE,
// PADDLE_TRAINER_ID, PADDLE_PSERVER_ID), else "process <pid>".
#pragma once

#include <string>

namespace flotilla::trace {

struct ProcessInfo {
  std::string label;  // "rank 0", "server 1", "launcher 0", "process 4711"
  std::string role;   // "trainer", "server", "launcher", "process"
  int id = 0;         // rank, server index, node index, or pid
  int pid = 0;
  std::string host;
  // A file-name-safe form of the label: "rank0", "server1".
  std::string file_stem() const;
};

// Read once from the environment; thread-safe.
const ProcessInfo& Self();
// Overrides the identity (the launcher names itself "launcher <node>").
void SetSelf(ProcessInfo info);

// Parses a label back into role and id ("rank 3" → trainer 3).
ProcessInfo ParseLabel(const std::string& label);

}  // namespace flotilla::trace
