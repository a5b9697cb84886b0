#include "launch/launcher_secret.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "flotilla/common/enforce.h"
#include "flotilla/common/job_secret.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/tls_files.h"
#include "launch/node_plan.h"

namespace flotilla::launch {

namespace {

// An inheritable (no close-on-exec) memory file holding `secret`, mode 0400.
int SecretMemfd(const std::string& secret) {
  const int fd = memfd_create("flotilla-job-secret", 0);
  FLOTILLA_CHECK(fd >= 0, Unavailable, "memfd_create: ", std::strerror(errno));
  const std::string line = secret + "\n";
  const bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) &&
                  fchmod(fd, 0400) == 0;
  if (!ok) close(fd);
  FLOTILLA_CHECK(ok, Unavailable, "cannot write the job secret to a memory file: ",
                 std::strerror(errno));
  return fd;
}

}  // namespace

LauncherSecret::LauncherSecret(const LaunchOptions& options, bool alone) {
  if (options.insecure) {
    log::Warn("flotilla launch --insecure: the job's store and parameter servers accept anyone "
              "who reaches their ports");
    child_env_.emplace_back(kInsecureEnv, "1");
    return;
  }
  if (auto given = JobSecretFromEnv()) {
    secret_ = *given;
    return;
  }
  FLOTILLA_ENFORCE(alone, "flotilla launch: the nodes of this job must share a job secret: set ",
                   kJobSecretFileEnv, " (a file readable only by you, the same on every node) or ",
                   kJobSecretEnv, " for every launcher, or pass --insecure to run unauthenticated");
  secret_ = GenerateJobSecret();
  memfd_ = SecretMemfd(secret_);
  child_env_.emplace_back(kJobSecretFileEnv, "/proc/self/fd/" + std::to_string(memfd_));
}

LauncherSecret::~LauncherSecret() {
  if (memfd_ >= 0) close(memfd_);
}

TlsFiles JobTlsFiles(const LaunchOptions& options) {
  auto absolute = [](const std::string& path) {
    return path.empty() ? path : std::filesystem::absolute(path).string();
  };
  const TlsFiles files{absolute(options.tls_cert), absolute(options.tls_key),
                       absolute(options.tls_ca)};
  CheckTlsFiles(files, {"--tls_cert", "--tls_key", "--tls_ca"});
  return files;
}

EnvList TlsChildEnv(const LaunchOptions& options) {
  const TlsFiles files = JobTlsFiles(options);
  EnvList env;
  if (!files.cert.empty()) env.emplace_back(kTlsCertEnv, files.cert);
  if (!files.key.empty()) env.emplace_back(kTlsKeyEnv, files.key);
  if (!files.ca.empty()) env.emplace_back(kTlsCaEnv, files.ca);
  return env;
}

bool RunsAlone(const LaunchOptions& options, RunMode mode) {
  return options.master.empty() && options.elastic_server.empty() &&
         StaticLayout(options, mode).nodes.size() == 1;
}

}  // namespace flotilla::launch
