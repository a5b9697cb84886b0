// Processes that tests and benches start: a program with its argv and
// environment, its output in memory or in files, a wait with a deadline, and
// an end the owner is sure of.
//
// A Process owns what it started. Its destructor ends a process that may
// still run (SIGKILL to the process's group, then to its pid) and reaps it, so
// every process a test starts is ended by the test on every way out of it: a
// failed ASSERT, an exception, an early return. The process is started by
// flotilla::launch::Spawn (flotilla/launch/child_process.h): in a process group
// of its own, stdin on /dev/null, signal dispositions reset, and SIGKILLed
// when the thread that started it ends, so even a test binary that is killed
// leaves nothing behind. Start a Process from a thread that outlives it.
//
// A Process is not thread-safe: use it from one thread at a time. It moves;
// it does not copy.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace flotilla::testing {

// Where one of the child's output streams goes.
enum class Output {
  kInherit,  // this process's own stdout / stderr (the default)
  kDiscard,  // /dev/null
  kCapture,  // memory of the Process's own, read back by Stdout() / Stderr()
  kFile,     // the file at stdout_path / stderr_path (created or truncated; kept)
  kStdout,   // stderr only: wherever stdout goes
};

struct ProcessOptions {
  std::vector<std::string> argv;  // argv[0]: a path, or a program looked up on PATH
  // "NAME=value" entries that the child's environment holds on top of this
  // process's (replacing an entry of the same name).
  std::vector<std::string> env;
  // How messages name the process ("gloo rank 1"); default: argv[0]'s file name.
  std::string name;
  Output stdout_to = Output::kInherit;
  Output stderr_to = Output::kInherit;
  std::string stdout_path, stderr_path;  // for Output::kFile
};

class Process {
 public:
  // Starts the program; returns once it runs (exec succeeded). Throws
  // NotFound naming argv[0] and PATH when it is no executable file,
  // Unavailable when an output file cannot be opened or fork/exec fails.
  explicit Process(ProcessOptions options);
  // Ends the process if it may still run (see above); never throws.
  ~Process();
  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }  // also its process-group id
  const std::string& name() const { return name_; }

  // Blocks up to `timeout` for the process to end. Returns its exit code, or
  // 128 + the number of the signal that ended it; nullopt when it still runs
  // then (it is left running). Once ended, returns the same code at once.
  std::optional<int> Wait(std::chrono::milliseconds timeout);

  // Wait, and a process still running after `timeout` is killed (its group)
  // and reaped: then throws DeadlineExceeded naming it, its pid and the time
  // ("comm_rank_helper (pid 42) still ran after 120000 ms: killed").
  int Finish(std::chrono::milliseconds timeout);

  // Sends `signal` to the process (its pid only), unless it has been reaped.
  void Kill(int signal);

  // SIGTERM, then up to `grace` for it to end, then SIGKILL to its group.
  // Returns the exit code as Wait does.
  int Terminate(std::chrono::milliseconds grace);

  // What the process wrote so far to a kCapture or kFile stream; "" for
  // other streams, and for stderr when it goes with stdout.
  std::string Stdout() const;
  std::string Stderr() const;

 private:
  struct Stream {
    Output to = Output::kInherit;
    std::string path;
    int fd = -1;  // kCapture: the memory file (read at offset 0)
  };
  static std::string Read(const Stream& stream);
  void KillGroupAndReap() noexcept;
  void End() noexcept;  // the destructor's work
  void Release() noexcept;

  std::string name_;
  pid_t pid_ = -1;
  int pidfd_ = -1;  // readable once the process ended
  std::optional<int> code_;
  Stream out_, err_;
};

}  // namespace flotilla::testing
