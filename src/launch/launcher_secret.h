// The launcher's side of the job secret (flotilla/common/job_secret.h).
#pragma once

#include <string>

#include "launch/env_contract.h"
#include "launch/options.h"

namespace flotilla::launch {

// The secret of one job and how the launcher hands it to its children.
// A secret the launcher made lives in an anonymous memory file (memfd) that
// every child inherits and reads as FLOTILLA_JOB_SECRET_FILE=/proc/self/fd/N:
// it is on no command line, in no file system, and gone with the last process
// of the job. Not copyable; closes the memory file on destruction.
class LauncherSecret {
 public:
  // Decides the job's secret:
  //  - --insecure: none (warns); children get FLOTILLA_INSECURE=1;
  //  - FLOTILLA_JOB_SECRET_FILE / FLOTILLA_JOB_SECRET set: that one (children
  //    inherit the variable);
  //  - else, a job of this node alone (`alone`): a fresh random one;
  //  - else throws InvalidArgument: the nodes of a job must share one.
  LauncherSecret(const LaunchOptions& options, bool alone);
  ~LauncherSecret();
  LauncherSecret(const LauncherSecret&) = delete;
  LauncherSecret& operator=(const LauncherSecret&) = delete;

  // The secret; "" for an insecure job.
  const std::string& secret() const { return secret_; }
  // What each child's environment gets on top of the inherited one.
  const EnvList& child_env() const { return child_env_; }

 private:
  std::string secret_;
  EnvList child_env_;
  int memfd_ = -1;
};

// True when this launcher runs the whole job: no --master, no elastic
// server, and one node in the static layout.
bool RunsAlone(const LaunchOptions& options, RunMode mode);

}  // namespace flotilla::launch
