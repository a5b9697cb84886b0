// How a child process ended, and the words the launcher uses for it.
#pragma once

#include <string>

namespace flotilla::launch {

struct ExitStatus {
  bool signaled = false;
  int code = 0;    // exit code when !signaled
  int signal = 0;  // signal number when signaled

  // From a waitpid() status.
  static ExitStatus FromWait(int wait_status);
  bool ok() const { return !signaled && code == 0; }
  // The shell's convention: the code, or 128 + signal.
  int ShellCode() const { return signaled ? 128 + signal : code; }
  // "exited with code 3" / "killed by signal SIGKILL (9): ...hint".
  std::string Describe() const;
};

// "SIGKILL" for 9; "signal 64" when the number has no name.
std::string SignalName(int signal);

}  // namespace flotilla::launch
