#include "pipe_command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "flotilla/common/enforce.h"
#include "flotilla/launch/child_process.h"

extern char** environ;

namespace flotilla::io {
namespace {

constexpr size_t kStderrTail = 2048;

// An fd closed on destruction.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  int get() const { return fd_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

int OpenForReading(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  FLOTILLA_CHECK(fd >= 0, NotFound, "dataset file '", path, "': ", std::strerror(errno));
  return fd;
}

// Reads `fd` to its end, keeping the last kStderrTail bytes.
std::string DrainTail(int fd) {
  std::string tail;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    tail.append(buf, static_cast<size_t>(n));
    if (tail.size() > 2 * kStderrTail) tail.erase(0, tail.size() - kStderrTail);
  }
  if (tail.size() > kStderrTail) tail.erase(0, tail.size() - kStderrTail);
  return tail;
}

std::vector<std::string> Environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

// The command under /bin/sh with `path` on its stdin (the path is passed as
// $0, never spliced into the script).
pid_t StartCommand(const std::string& path, const std::string& command, int stdout_fd, int stderr_fd) {
  static std::mutex spawn_mutex;  // launch::Spawn is not thread-safe
  std::lock_guard<std::mutex> lock(spawn_mutex);
  launch::SpawnOptions options;
  options.argv = {"/bin/sh", "-c", "exec <\"$0\" || exit 126\n" + command, path};
  options.env = Environment();
  options.output_fd = stdout_fd;
  options.error_fd = stderr_fd;
  return launch::Spawn(options);
}

int WaitFor(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Waits up to `grace` for `pid` to exit, then kills its group and waits.
// Sets *killed when it had to.
int WaitOrKill(pid_t pid, std::chrono::milliseconds grace, bool* killed) {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  launch::SignalGroup(pid, SIGKILL);
  *killed = true;
  return WaitFor(pid);
}

// A command that ended because we stopped reading its output: SIGPIPE,
// directly or as the shell's 128 + SIGPIPE.
bool DiedOfClosedOutput(int status) {
  return (WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE) ||
         (WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGPIPE);
}

std::string DescribeExit(int status) {
  if (WIFSIGNALED(status))
    return StrCat("was killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  return StrCat("exited with status ", WEXITSTATUS(status));
}

std::string CommandFailure(const std::string& command, const std::string& path, int status,
                           const std::string& stderr_tail) {
  return StrCat("pipe command '", command, "' on ", path, " ", DescribeExit(status),
                stderr_tail.empty() ? "; its stderr is empty" : "; its stderr ends:\n", stderr_tail);
}

}  // namespace

int64_t ParseThroughPipe(const MultiSlotParser& parser, const std::string& path, const std::string& command,
                         SlotColumns* out, const MultiSlotParser::ChunkSink& on_chunk) {
  if (command.empty() || command == "cat") {
    Fd file(OpenForReading(path));
    return parser.ParseFd(file.get(), path, out, on_chunk);
  }
  { Fd probe(OpenForReading(path)); }  // a missing file is NotFound, not a shell error
  int out_pipe[2], err_pipe[2];
  FLOTILLA_CHECK(::pipe2(out_pipe, O_CLOEXEC) == 0, Unavailable, "pipe2: ", std::strerror(errno));
  Fd out_read(out_pipe[0]), out_write(out_pipe[1]);
  FLOTILLA_CHECK(::pipe2(err_pipe, O_CLOEXEC) == 0, Unavailable, "pipe2: ", std::strerror(errno));
  Fd err_read(err_pipe[0]), err_write(err_pipe[1]);
  const pid_t pid = StartCommand(path, command, out_write.get(), err_write.get());
  out_write.Close();
  err_write.Close();
  std::string stderr_tail;
  std::thread stderr_reader([&] { stderr_tail = DrainTail(err_read.get()); });
  const std::string source = StrCat(path, " (via '", command, "')");
  int64_t records = 0;
  try {
    records = parser.ParseFd(out_read.get(), source, out, on_chunk);
  } catch (const Corruption& e) {
    // Stop reading: the command dies of SIGPIPE on its next write, or is
    // killed. When it had failed on its own (a reader crashing mid-line),
    // its exit status and stderr are the cause, the cut line only a symptom.
    out_read.Close();
    bool killed = false;
    const int status = WaitOrKill(pid, std::chrono::seconds(5), &killed);
    stderr_reader.join();
    if (killed || DiedOfClosedOutput(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0)) throw;
    FLOTILLA_THROW(Unavailable, CommandFailure(command, path, status, stderr_tail), "\n(its output then failed to parse: ",
                   e.what(), ")");
  } catch (...) {
    launch::SignalGroup(pid, SIGKILL);
    WaitFor(pid);
    stderr_reader.join();
    throw;
  }
  const int status = WaitFor(pid);
  stderr_reader.join();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return records;
  FLOTILLA_THROW(Unavailable, CommandFailure(command, path, status, stderr_tail));
}

}  // namespace flotilla::io
