#include "flotilla/launch/child_process.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"

namespace flotilla::launch {

std::string ResolveProgram(const std::string& program, const std::string& path) {
  if (program.find('/') != std::string::npos) {
    FLOTILLA_CHECK(access(program.c_str(), X_OK) == 0, NotFound, "cannot execute '", program,
                   "': ", std::strerror(errno));
    return program;
  }
  for (const auto& dir : Split(path, ':')) {
    std::string candidate = dir + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  FLOTILLA_THROW(NotFound, "program '", program, "' is not an executable on PATH=", path);
}

namespace {

std::vector<char*> CStrings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

std::string PathOf(const std::vector<std::string>& env) {
  for (const auto& e : env) {
    if (StartsWith(e, "PATH=")) return e.substr(5);
  }
  return "/usr/local/bin:/usr/bin:/bin";
}

// Runs in the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void ExecChild(pid_t launcher, const char* program, char** argv, char** envp,
                            int output_fd, int error_fd, int error_pipe) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != launcher) _exit(127);  // the launcher died before prctl took effect
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD}) signal(sig, SIG_DFL);
  if (output_fd >= 0) dup2(output_fd, STDOUT_FILENO);
  if (error_fd >= 0 || output_fd >= 0) dup2(error_fd >= 0 ? error_fd : output_fd, STDERR_FILENO);
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
  execve(program, argv, envp);
  int err = errno;
  (void)!write(error_pipe, &err, sizeof(err));
  _exit(127);
}

}  // namespace

pid_t Spawn(const SpawnOptions& options) {
  FLOTILLA_ENFORCE(!options.argv.empty(), "no program to start");
  const std::string program = ResolveProgram(options.argv[0], PathOf(options.env));
  std::vector<char*> argv = CStrings(options.argv);
  std::vector<char*> envp = CStrings(options.env);
  int error_pipe[2];
  FLOTILLA_CHECK(pipe2(error_pipe, O_CLOEXEC) == 0, Unavailable, "pipe2: ", std::strerror(errno));
  const pid_t launcher = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    ExecChild(launcher, program.c_str(), argv.data(), envp.data(), options.output_fd,
              options.error_fd, error_pipe[1]);
  }
  close(error_pipe[1]);
  int err = 0;
  ssize_t n;
  do {
    n = read(error_pipe[0], &err, sizeof(err));  // EOF once exec succeeded (CLOEXEC)
  } while (n < 0 && errno == EINTR);
  close(error_pipe[0]);
  FLOTILLA_CHECK(pid > 0, Unavailable, "fork: ", std::strerror(errno));
  // Also set the group from the parent: whichever runs first, the group
  // exists before the launcher may signal it.
  setpgid(pid, pid);
  if (n == sizeof(err)) {
    waitpid(pid, nullptr, 0);
    FLOTILLA_THROW(Unavailable, "cannot execute '", program, "': ", std::strerror(err));
  }
  return pid;
}

void SignalGroup(pid_t pgid, int signal) {
  if (pgid > 0) kill(-pgid, signal);
}

}  // namespace flotilla::launch
