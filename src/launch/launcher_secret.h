// The launcher's side of the job's credentials: the job secret
// (flotilla/common/job_secret.h) and the TLS files
// (flotilla/common/tls_files.h) it hands to its children.
#pragma once

#include <string>

#include "flotilla/common/tls_files.h"
#include "flotilla/launch/options.h"
#include "launch/env_contract.h"

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

// The job's TLS files: --tls_cert/--tls_key/--tls_ca made absolute (the
// launcher's stores use them). Throws InvalidArgument naming the flag when
// only one of --tls_cert and --tls_key is given or a file is not readable PEM.
TlsFiles JobTlsFiles(const LaunchOptions& options);
// What each child's environment gets for them: FLOTILLA_TLS_CERT/KEY/CA;
// nothing when none is given. Throws as JobTlsFiles.
EnvList TlsChildEnv(const LaunchOptions& options);

// True when this launcher runs the whole job: no --master, no elastic
// server, and one node in the static layout.
bool RunsAlone(const LaunchOptions& options, RunMode mode);

}  // namespace flotilla::launch
