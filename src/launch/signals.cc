#include "flotilla/launch/signals.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "flotilla/common/enforce.h"

namespace flotilla::launch {

namespace {
sigset_t LauncherSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, sig);
  return set;
}
}  // namespace

void BlockLauncherSignals() {
  sigset_t set = LauncherSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

SignalFd::SignalFd() {
  sigset_t set = LauncherSignals();
  fd_ = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  FLOTILLA_CHECK(fd_ >= 0, Unavailable, "signalfd: ", std::strerror(errno));
}

SignalFd::~SignalFd() {
  if (fd_ >= 0) close(fd_);
}

std::vector<int> SignalFd::Drain() {
  std::vector<int> out;
  signalfd_siginfo info;
  while (read(fd_, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
    out.push_back(static_cast<int>(info.ssi_signo));
  }
  return out;
}

}  // namespace flotilla::launch
