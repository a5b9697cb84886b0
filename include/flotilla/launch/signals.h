// The launcher's signals, read synchronously through a signalfd.
//
// BlockLauncherSignals() must run before the launcher creates any thread
// (threads inherit the mask): SIGINT, SIGTERM, SIGHUP and SIGCHLD are then
// never delivered asynchronously to any thread and instead queue on the
// signalfd, which the supervisor polls together with its pipes. Children
// undo the mask before exec (child_process.cc). SIGPIPE is ignored so a
// closed console never kills the launcher.
#pragma once

#include <vector>

namespace flotilla::launch {

void BlockLauncherSignals();

// A signalfd for the blocked signals (non-blocking, close-on-exec). Owns
// the descriptor.
class SignalFd {
 public:
  SignalFd();
  ~SignalFd();
  SignalFd(const SignalFd&) = delete;
  SignalFd& operator=(const SignalFd&) = delete;

  int fd() const { return fd_; }
  // Signals that arrived since the last call, in order (SIGCHLD included).
  std::vector<int> Drain();

 private:
  int fd_ = -1;
};

}  // namespace flotilla::launch
