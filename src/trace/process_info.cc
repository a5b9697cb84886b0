#include "flotilla/trace/process_info.h"

#include <unistd.h>

#include <cstdlib>
#include <mutex>

namespace flotilla::trace {

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

int ToInt(const std::string& s, int fallback) {
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  return !s.empty() && end && *end == '\0' ? static_cast<int>(v) : fallback;
}

std::string HostName() {
  char buf[256] = {0};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

ProcessInfo FromEnvironment() {
  const std::string label = Env("FLOTILLA_TRACE_LABEL");
  ProcessInfo info;
  if (!label.empty()) {
    info = ParseLabel(label);
  } else {
    std::string role = Env("TRAINING_ROLE");
    if (role.empty()) role = Env("PADDLE_TRAINING_ROLE");
    const int trainer = ToInt(Env("PADDLE_TRAINER_ID"), -1);
    const int server = ToInt(Env("PADDLE_PSERVER_ID"), -1);
    if (role == "PSERVER" && server >= 0) {
      info = ParseLabel("server " + std::to_string(server));
    } else if (role != "PSERVER" && trainer >= 0) {
      info = ParseLabel("rank " + std::to_string(trainer));
    } else {
      info = ParseLabel("process " + std::to_string(getpid()));
    }
  }
  info.pid = getpid();
  info.host = HostName();
  return info;
}

std::mutex self_mu;
ProcessInfo* self = nullptr;  // guarded by self_mu; never freed

}  // namespace

std::string ProcessInfo::file_stem() const {
  std::string out;
  for (char c : label) {
    if (c != ' ') out.push_back(c == '/' ? '_' : c);
  }
  return out;
}

ProcessInfo ParseLabel(const std::string& label) {
  ProcessInfo info;
  info.label = label;
  const size_t space = label.rfind(' ');
  const std::string word = label.substr(0, space);
  info.id = space == std::string::npos ? 0 : ToInt(label.substr(space + 1), 0);
  if (word == "rank" || word == "trainer") {
    info.role = "trainer";
  } else if (word == "server") {
    info.role = "server";
  } else if (word == "launcher") {
    info.role = "launcher";
  } else {
    info.role = "process";
  }
  return info;
}

const ProcessInfo& Self() {
  std::lock_guard<std::mutex> lock(self_mu);
  if (!self) self = new ProcessInfo(FromEnvironment());
  return *self;
}

void SetSelf(ProcessInfo info) {
  std::lock_guard<std::mutex> lock(self_mu);
  info.pid = getpid();
  if (info.host.empty()) info.host = HostName();
  if (!self) {
    self = new ProcessInfo(std::move(info));
  } else {
    *self = std::move(info);  // callers set it once, before any reader
  }
}

}  // namespace flotilla::trace
