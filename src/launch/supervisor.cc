#include "launch/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "flotilla/common/enforce.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/strings.h"
#include "flotilla/launch/child_process.h"
#include "launch/log_file.h"

namespace flotilla::launch {

namespace {

using Clock = std::chrono::steady_clock;

struct Child {
  ProcessSpec spec;
  LogFile log;
  pid_t pid = 0;
  int relay_fd = -1;  // read end of the console pipe, or -1
  bool line_start = true;  // the console output stopped at a line's end
  bool running = false;
  bool sent_term = false;
  bool sent_kill = false;
  ExitStatus status;
};

// One run of the watchdog over one world.
class Watch {
 public:
  Watch(const SupervisorOptions& options, SignalFd& signals, const ClusterSpec& spec,
        JobChannel& channel)
      : options_(options), signals_(signals), spec_(spec), channel_(channel) {}
  ~Watch();

  void Start(const std::vector<std::string>& command,
             const std::vector<std::vector<std::string>>& child_env);
  RunResult Loop();

 private:
  size_t RelayIndex() const;
  bool Streams(size_t index) const;
  bool Prefixed() const;
  void WriteConsole(Child& c, const char* data, size_t n);
  std::vector<ProcessView> Views() const;
  void PublishStatus();
  void CheckStall();
  void Diagnose();
  void StartOne(Child& c, size_t index, const std::vector<std::string>& command,
                const std::vector<std::string>& env);
  void PollOnce();
  void OnSignals();
  void Relay(Child& c);
  void ReapAll();
  void OnExit(Child& c, int wait_status);
  bool IsFailure(const Child& c) const;
  bool LostNotFailed(const Child& c) const;
  void CheckPeers();
  void CheckPsDone();
  void BeginStop(int exit_code, bool servers_only = false);
  void KillAll();
  bool AnyRunning() const;
  RunResult Result();

  const SupervisorOptions& options_;
  SignalFd& signals_;
  const ClusterSpec& spec_;
  JobChannel& channel_;
  std::vector<Child> children_;
  bool stopping_ = false;
  bool killed_ = false;
  Clock::time_point kill_deadline_;
  int exit_code_ = 0;
  int launcher_signal_ = 0;
  int local_trainers_ok_ = 0;
  std::optional<AbortNotice> peer_abort_;
  std::vector<size_t> failed_;  // indexes into children_
  std::vector<size_t> lost_;    // indexes into children_ (fault tolerance step)
  std::string stall_;
  std::string diagnosis_;
};

Watch::~Watch() {
  // Whatever path we leave by, no process group of ours survives. Only
  // unreaped children are signalled: a reaped child's group was killed
  // before it was reaped (ReapAll), and its id may belong to anyone now.
  for (auto& c : children_) {
    if (c.running) {
      SignalGroup(c.pid, SIGKILL);
      waitpid(c.pid, nullptr, 0);
    }
    if (c.relay_fd >= 0) close(c.relay_fd);
  }
}

// The process whose output goes to the console: local rank 0 (the first
// local trainer), else the first local server.
size_t Watch::RelayIndex() const {
  for (size_t i = 0; i < children_.size(); ++i) {
    if (children_[i].spec.role == Role::kTrainer) return i;
  }
  return 0;
}

// Whether process `index` streams to the console (SupervisorOptions::tee).
bool Watch::Streams(size_t index) const {
  const std::string& tee = options_.tee;
  if (!options_.relay_to_console || tee == "none") return false;
  if (tee.empty()) return index == RelayIndex();
  if (tee == "all") return true;
  const ProcessSpec& p = children_[index].spec;
  for (const std::string& item : Split(tee, ',')) {
    if (item == p.label() || (p.role == Role::kTrainer && item == std::to_string(p.id))) return true;
  }
  return false;
}

bool Watch::Prefixed() const {
  if (options_.log_prefix == "always") return true;
  if (options_.log_prefix == "never") return false;
  int streaming = 0;
  for (size_t i = 0; i < children_.size(); ++i) streaming += Streams(i);
  return streaming > 1;
}

void Watch::StartOne(Child& c, size_t index, const std::vector<std::string>& command,
                     const std::vector<std::string>& env) {
  c.log = LogFile::Open(options_.log_dir, c.spec.log_name());
  c.log.WriteHeader(StrCat("flotilla launch: ", c.spec.label(), " (node ", c.spec.node,
                           ", local rank ", c.spec.local_rank, ", endpoint ", c.spec.endpoint(),
                           "): ", Join(command, " ")));
  SpawnOptions spawn{command, env, c.log.fd()};
  int pipe_fds[2] = {-1, -1};
  const bool relay = Streams(index);
  if (relay) {
    FLOTILLA_CHECK(pipe2(pipe_fds, O_CLOEXEC) == 0, Unavailable, "pipe2: ", std::strerror(errno));
    spawn.output_fd = pipe_fds[1];
  }
  try {
    c.pid = Spawn(spawn);
  } catch (...) {
    if (relay) {
      close(pipe_fds[0]);
      close(pipe_fds[1]);
    }
    throw;
  }
  c.running = true;
  if (relay) {
    close(pipe_fds[1]);
    c.relay_fd = pipe_fds[0];
    fcntl(c.relay_fd, F_SETFL, O_NONBLOCK);
  }
}

void Watch::Start(const std::vector<std::string>& command,
                  const std::vector<std::vector<std::string>>& child_env) {
  for (const auto& p : spec_.LocalProcesses()) children_.push_back(Child{p});
  FLOTILLA_ENFORCE_EQ(child_env.size(), children_.size(), "one environment per local process");
  for (size_t i = 0; i < children_.size(); ++i) {
    StartOne(children_[i], i, command, child_env[i]);
  }
  for (const auto& c : children_) {
    log::Info("started {} pid {} endpoint {} log {}", c.spec.label(), c.pid, c.spec.endpoint(),
              c.log.path());
  }
  PublishStatus();
}

std::vector<ProcessView> Watch::Views() const {
  std::vector<ProcessView> out;
  for (const auto& c : children_) {
    ProcessView v{c.spec, c.pid, c.running, "running", "running", c.log.path()};
    if (!c.running) {
      const bool failed = std::find(failed_.begin(), failed_.end(),
                                    static_cast<size_t>(&c - children_.data())) != failed_.end();
      v.state = failed ? "failed" : "exited";
      v.status = c.status.Describe();
    }
    out.push_back(std::move(v));
  }
  return out;
}

void Watch::PublishStatus() {
  if (options_.hooks.on_status) options_.hooks.on_status(Views());
}

void Watch::Diagnose() {
  if (options_.hooks.diagnose && diagnosis_.empty()) diagnosis_ = options_.hooks.diagnose(Views());
}

// A stall stops the job like a failure, with timeout(1)'s exit code.
void Watch::CheckStall() {
  if (stopping_ || !options_.hooks.stalled) return;
  std::optional<std::string> what = options_.hooks.stalled();
  if (!what) return;
  stall_ = *what;
  log::Error("the job stalled: {}", stall_);
  Diagnose();
  BeginStop(124);
  channel_.Abort({spec_.node_index, exit_code_,
                  StrCat("node ", spec_.node_index, " (", spec_.nodes[spec_.node_index],
                         "): the job stalled: ", stall_)});
}

void Watch::Relay(Child& c) {
  char buf[64 * 1024];
  while (c.relay_fd >= 0) {
    ssize_t n = read(c.relay_fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // EAGAIN: nothing more for now
    if (n == 0) {       // every writer is gone
      close(c.relay_fd);
      c.relay_fd = -1;
      return;
    }
    c.log.Append(buf, static_cast<size_t>(n));
    WriteConsole(c, buf, static_cast<size_t>(n));
  }
}

namespace {
void WriteAll(const char* data, size_t n) {
  for (size_t off = 0; off < n;) {
    ssize_t w = write(STDOUT_FILENO, data + off, n - off);
    if (w <= 0) return;  // a closed console must not stop the job
    off += static_cast<size_t>(w);
  }
}
}  // namespace

// Copies output to stdout, each line prefixed with "[rank N] " when several
// processes stream (torchrun's style), so interleaved lines stay readable.
void Watch::WriteConsole(Child& c, const char* data, size_t n) {
  if (!Prefixed()) return WriteAll(data, n);
  const std::string prefix = "[" + c.spec.label() + "] ";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    if (c.line_start) out += prefix;
    out.push_back(data[i]);
    c.line_start = data[i] == '\n';
  }
  WriteAll(out.data(), out.size());
}

bool Watch::IsFailure(const Child& c) const {
  if (c.status.ok()) return false;
  if (!c.sent_term) return true;  // it ended on its own
  // After we asked it to stop, only a crash still counts: a signal we did
  // not send (SIGSEGV, an OOM kill before our SIGKILL).
  if (!c.status.signaled) return false;
  return !(c.status.signal == SIGTERM || (c.status.signal == SIGKILL && c.sent_kill));
}

// Fault tolerance "step": a trainer's failure while we are not stopping and
// another trainer still runs is a loss the others survive.
bool Watch::LostNotFailed(const Child& c) const {
  if (!options_.fault_tolerance_step || stopping_ || c.spec.role != Role::kTrainer) return false;
  for (const auto& other : children_) {
    if (other.running && other.spec.role == Role::kTrainer) return true;
  }
  return false;
}

void Watch::OnExit(Child& c, int wait_status) {
  c.running = false;
  c.status = ExitStatus::FromWait(wait_status);
  Relay(c);
  if (IsFailure(c) && LostNotFailed(c)) {
    lost_.push_back(static_cast<size_t>(&c - children_.data()));
    log::Warn("{} (pid {}) {}; fault tolerance: the other trainers go on without it", c.spec.label(),
              c.pid, c.status.Describe());
    if (options_.hooks.on_lost) options_.hooks.on_lost(c.spec, c.status.Describe());
    PublishStatus();
    return;
  }
  if (IsFailure(c)) {
    failed_.push_back(static_cast<size_t>(&c - children_.data()));
    log::Error("{} (pid {}) {}", c.spec.label(), c.pid, c.status.Describe());
    PublishStatus();
    if (!stopping_) {
      Diagnose();
      BeginStop(c.status.ShellCode());
      channel_.Abort({spec_.node_index, exit_code_,
                      StrCat(c.spec.label(), " on node ", spec_.node_index, " (",
                             spec_.nodes[spec_.node_index], ") ", c.status.Describe())});
    }
    return;
  }
  if (c.spec.role == Role::kTrainer && c.status.ok() && !c.sent_term) {
    ++local_trainers_ok_;
    channel_.TrainerSucceeded();
  }
  PublishStatus();
}

// An exited child is first seen without being reaped (WNOWAIT): while it
// is a zombie its pid, which is its group's id, cannot be reused, so
// killing what it left behind in its group reaches nobody else. Then it is
// reaped, and its group is never signalled again.
void Watch::ReapAll() {
  for (auto& c : children_) {
    if (!c.running) continue;
    siginfo_t info{};
    if (waitid(P_PID, c.pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != c.pid) {
      continue;
    }
    SignalGroup(c.pid, SIGKILL);
    int status = 0;
    if (waitpid(c.pid, &status, 0) == c.pid) OnExit(c, status);
  }
}

void Watch::BeginStop(int exit_code, bool servers_only) {
  if (stopping_) return;
  stopping_ = true;
  exit_code_ = exit_code;
  kill_deadline_ = Clock::now() + options_.grace_period;
  for (auto& c : children_) {
    if (!c.running || (servers_only && c.spec.role == Role::kTrainer)) continue;
    c.sent_term = true;
    SignalGroup(c.pid, SIGTERM);
  }
}

void Watch::KillAll() {
  killed_ = true;
  for (auto& c : children_) {
    if (!c.running) continue;
    c.sent_term = c.sent_kill = true;
    SignalGroup(c.pid, SIGKILL);
  }
}

void Watch::OnSignals() {
  for (int sig : signals_.Drain()) {
    if (sig == SIGCHLD) continue;
    if (stopping_) {
      // Already stopping (a second signal, or Ctrl-C during a failure's
      // grace period): the user wants it over now.
      log::Warn("{} while stopping: killing every process now", SignalName(sig));
      if (launcher_signal_ == 0) launcher_signal_ = sig;
      KillAll();
      continue;
    }
    log::Warn("received {}: stopping every process (again to kill at once)", SignalName(sig));
    launcher_signal_ = sig;
    BeginStop(128 + sig);
  }
}

void Watch::CheckPeers() {
  if (stopping_) return;
  if (auto notice = channel_.PeerAbort()) {
    peer_abort_ = notice;
    log::Error("stopping the job: {}", notice->message);
    BeginStop(notice->exit_code == 0 ? 1 : notice->exit_code);
  }
}

// Parameter-server mode: once every trainer of the job has exited 0, the
// servers have nothing left to serve.
void Watch::CheckPsDone() {
  if (stopping_ || spec_.mode != RunMode::kPs) return;
  if (local_trainers_ok_ < spec_.LocalTrainerCount()) return;
  if (channel_.TrainersSucceeded() < static_cast<int>(spec_.trainers.size())) return;
  log::Info("all {} trainers finished; stopping the servers{}", spec_.trainers.size(),
            spec_.heter_workers.empty() ? "" : " and heter workers");
  BeginStop(0, /*servers_only=*/true);
}

bool Watch::AnyRunning() const {
  for (const auto& c : children_) {
    if (c.running) return true;
  }
  return false;
}

void Watch::PollOnce() {
  std::vector<pollfd> fds = {{signals_.fd(), POLLIN, 0}};
  for (const auto& c : children_) {
    if (c.relay_fd >= 0) fds.push_back({c.relay_fd, POLLIN, 0});
  }
  auto timeout = options_.poll_interval;
  if (stopping_ && !killed_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(kill_deadline_ - Clock::now());
    timeout = std::max(std::chrono::milliseconds(0), std::min(timeout, left));
  }
  poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
}

RunResult Watch::Loop() {
  while (AnyRunning()) {
    PollOnce();
    OnSignals();
    for (auto& c : children_) Relay(c);
    ReapAll();
    CheckPeers();
    CheckStall();
    CheckPsDone();
    if (stopping_ && !killed_ && Clock::now() >= kill_deadline_) {
      if (AnyRunning()) log::Warn("grace period over: sending SIGKILL");
      KillAll();
    }
  }
  return Result();
}

RunResult Watch::Result() {
  RunResult r;
  r.exit_code = exit_code_;
  r.launcher_signal = launcher_signal_;
  r.peer_abort = peer_abort_;
  r.stall = stall_;
  r.diagnosis = diagnosis_;
  for (const auto& c : children_) {
    r.processes.push_back({c.spec, c.pid, c.status, c.log.path(), {}});
  }
  // A job that failed after losing trainers reports those too: they may
  // have died of the same cause.
  std::vector<size_t> failed = failed_;
  if (exit_code_ != 0) failed.insert(failed.begin(), lost_.begin(), lost_.end());
  for (size_t i : failed) {
    ProcessOutcome o = r.processes[i];
    o.tail = children_[i].log.Tail(options_.tail_lines);
    r.failed.push_back(std::move(o));
  }
  for (size_t i : lost_) r.lost.push_back(r.processes[i]);
  return r;
}

}  // namespace

Supervisor::Supervisor(SupervisorOptions options, SignalFd& signals)
    : options_(std::move(options)), signals_(signals) {}

RunResult Supervisor::Run(const ClusterSpec& spec, const std::vector<std::string>& command,
                          JobChannel& channel,
                          const std::vector<std::vector<std::string>>& child_env) {
  Watch watch(options_, signals_, spec, channel);
  watch.Start(command, child_env);  // on failure ~Watch kills what started
  return watch.Loop();
}

}  // namespace flotilla::launch
