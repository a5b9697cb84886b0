#include "launch/exit_status.h"

#include <sys/wait.h>

#include <csignal>
#include <cstring>

#include "flotilla/common/enforce.h"

namespace flotilla::launch {

ExitStatus ExitStatus::FromWait(int wait_status) {
  ExitStatus s;
  if (WIFSIGNALED(wait_status)) {
    s.signaled = true;
    s.signal = WTERMSIG(wait_status);
  } else {
    s.code = WEXITSTATUS(wait_status);
  }
  return s;
}

std::string SignalName(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  return abbrev ? StrCat("SIG", abbrev) : StrCat("signal ", signal);
}

namespace {

// What usually sends each signal, for the people reading the ABORT report.
const char* SignalHint(int signal) {
  switch (signal) {
    case SIGKILL:
      return "; nothing can catch SIGKILL: if no one sent it, the kernel's OOM killer "
             "may have (check `dmesg` or `journalctl -k` for \"Out of memory\")";
    case SIGSEGV: return "; the program touched invalid memory";
    case SIGABRT: return "; the program aborted (failed assertion or uncaught exception)";
    case SIGBUS: return "; bad memory access (often a truncated memory-mapped file)";
    case SIGFPE: return "; arithmetic fault (integer division by zero)";
    case SIGTERM: return "; someone asked it to stop";
    default: return "";
  }
}

}  // namespace

std::string ExitStatus::Describe() const {
  if (!signaled) return StrCat("exited with code ", code);
  return StrCat("killed by signal ", SignalName(signal), " (", signal, ")", SignalHint(signal));
}

}  // namespace flotilla::launch
