#include "flotilla/testing/process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <thread>
#include <utility>

#include "flotilla/common/enforce.h"
#include "flotilla/common/file_util.h"
#include "flotilla/launch/child_process.h"

extern char** environ;

namespace flotilla::testing {

namespace {

using Clock = std::chrono::steady_clock;

std::string NameOf(const std::string& entry) { return entry.substr(0, entry.find('=')); }

// This process's environment with `extra` on top.
std::vector<std::string> MergedEnv(const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const bool replaced = std::any_of(extra.begin(), extra.end(), [&](const std::string& x) {
      return NameOf(x) == NameOf(entry);
    });
    if (!replaced) out.push_back(entry);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

// The descriptor the child's stream `inherited` (1 or 2) becomes. One this
// call opens is also left in `*opened`, for the caller to keep (kCapture) or
// close once the child runs.
int OpenStream(Output to, const std::string& path, const std::string& name, int inherited,
               int* opened) {
  int fd = -1;
  switch (to) {
    case Output::kInherit:
    case Output::kStdout:
      return inherited;
    case Output::kDiscard:
      fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
      break;
    case Output::kCapture:
      fd = memfd_create(name.c_str(), MFD_CLOEXEC);
      break;
    case Output::kFile:
      fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      break;
  }
  FLOTILLA_CHECK(fd >= 0, Unavailable, "output of ", name, " (",
                 to == Output::kFile ? path : std::string("memory or /dev/null"),
                 "): ", std::strerror(errno));
  *opened = fd;
  return fd;
}

int ExitCode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

Process::Process(ProcessOptions options)
    : name_(options.name),
      out_{options.stdout_to, options.stdout_path},
      err_{options.stderr_to, options.stderr_path} {
  FLOTILLA_ENFORCE(!options.argv.empty(), "no program to start");
  FLOTILLA_ENFORCE(out_.to != Output::kStdout, "only stderr can go with stdout");
  if (name_.empty()) name_ = std::filesystem::path(options.argv[0]).filename().string();
  int out_opened = -1, err_opened = -1;
  try {
    launch::SpawnOptions spawn{std::move(options.argv), MergedEnv(options.env)};
    spawn.output_fd = OpenStream(out_.to, out_.path, name_, STDOUT_FILENO, &out_opened);
    spawn.error_fd = err_.to == Output::kStdout
                         ? spawn.output_fd
                         : OpenStream(err_.to, err_.path, name_, STDERR_FILENO, &err_opened);
    pid_ = launch::Spawn(spawn);
  } catch (...) {
    if (out_opened >= 0) close(out_opened);
    if (err_opened >= 0) close(err_opened);
    throw;
  }
  // A captured stream stays open to be read; a file or /dev/null is the child's.
  if (out_.to == Output::kCapture) out_.fd = out_opened;
  else if (out_opened >= 0) close(out_opened);
  if (err_.to == Output::kCapture) err_.fd = err_opened;
  else if (err_opened >= 0) close(err_opened);
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));  // -1: wait by polling
}

Process::~Process() { End(); }

Process::Process(Process&& other) noexcept
    : name_(std::move(other.name_)),
      pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::exchange(other.pidfd_, -1)),
      code_(other.code_),
      out_(std::exchange(other.out_, {})),
      err_(std::exchange(other.err_, {})) {}

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    End();
    name_ = std::move(other.name_);
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::exchange(other.pidfd_, -1);
    code_ = other.code_;
    out_ = std::exchange(other.out_, {});
    err_ = std::exchange(other.err_, {});
  }
  return *this;
}

std::optional<int> Process::Wait(std::chrono::milliseconds timeout) {
  if (code_ || pid_ < 0) return code_;
  const auto deadline = Clock::now() + timeout;
  while (true) {
    int status = 0;
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      code_ = ExitCode(status);
      Release();
      return code_;
    }
    FLOTILLA_CHECK(r == 0 || errno == EINTR, Internal, "waitpid(", name_, " pid ", pid_,
                   "): ", std::strerror(errno));
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return std::nullopt;
    const auto step = std::min<std::chrono::milliseconds>(left, std::chrono::seconds(1));
    if (pidfd_ >= 0) {
      pollfd ended{pidfd_, POLLIN, 0};
      poll(&ended, 1, static_cast<int>(step.count()));
    } else {
      std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(step, std::chrono::milliseconds(10)));
    }
  }
}

int Process::Finish(std::chrono::milliseconds timeout) {
  if (auto code = Wait(timeout)) return *code;
  const pid_t pid = pid_;
  KillGroupAndReap();
  FLOTILLA_THROW(DeadlineExceeded, name_, " (pid ", pid, ") still ran after ", timeout.count(),
                 " ms: killed");
}

void Process::Kill(int signal) {
  if (pid_ > 0 && !code_) kill(pid_, signal);
}

int Process::Terminate(std::chrono::milliseconds grace) {
  Kill(SIGTERM);
  if (auto code = Wait(grace)) return *code;
  KillGroupAndReap();
  return code_.value_or(128 + SIGKILL);
}

std::string Process::Stdout() const { return Read(out_); }
std::string Process::Stderr() const { return Read(err_); }

std::string Process::Read(const Stream& stream) {
  if (stream.to == Output::kFile) return FileExists(stream.path) ? ReadFile(stream.path) : "";
  std::string text;
  if (stream.to != Output::kCapture || stream.fd < 0) return text;
  char buf[1 << 16];
  ssize_t n;
  while ((n = pread(stream.fd, buf, sizeof(buf), static_cast<off_t>(text.size()))) > 0) {
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

void Process::KillGroupAndReap() noexcept {
  if (pid_ <= 0 || code_) return;
  launch::SignalGroup(pid_, SIGKILL);
  kill(pid_, SIGKILL);  // in case it left its group
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, 0);
  } while (r < 0 && errno == EINTR);
  code_ = r == pid_ ? ExitCode(status) : 128 + SIGKILL;
  Release();
}

void Process::End() noexcept {
  KillGroupAndReap();
  Release();
  for (Stream* s : {&out_, &err_}) {
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
  }
}

void Process::Release() noexcept {
  if (pidfd_ >= 0) close(pidfd_);
  pidfd_ = -1;
}

}  // namespace flotilla::testing
