#include "launch_test_util.h"

#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace flotilla::launch_test {

using Clock = std::chrono::steady_clock;

std::string BuildDir() {
  const char* dir = std::getenv("FLOTILLA_BUILD_DIR");
  return dir ? dir : "build";
}
std::string Bin(const std::string& name) { return BuildDir() + "/bin/" + name; }
std::string FlotillaBin() { return Bin("flotilla"); }
std::string ProbeBin() { return Bin("launch_probe"); }

std::chrono::milliseconds Scaled(std::chrono::milliseconds d) {
  const char* scale = std::getenv("FLOTILLA_TEST_TIME_SCALE");
  const int factor = scale ? std::atoi(scale) : 1;
  return d * std::max(factor, 1);
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/flotilla_launch_test.XXXXXX";
  path_ = mkdtemp(tmpl);
}

TempDir::~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }

namespace {

testing::ProcessOptions ChildOptions(const std::vector<std::string>& argv,
                                     const std::string& output_dir,
                                     const std::vector<std::string>& env,
                                     const std::string& netns) {
  static int counter = 0;
  const std::string n = std::to_string(counter++);
  testing::ProcessOptions o;
  o.argv = argv;
  if (!netns.empty()) o.argv.insert(o.argv.begin(), {"/usr/sbin/ip", "netns", "exec", netns});
  o.env = env;
  o.name = argv.at(0).substr(argv[0].rfind('/') + 1);
  o.stdout_to = o.stderr_to = testing::Output::kFile;
  o.stdout_path = output_dir + "/child" + n + ".out";
  o.stderr_path = output_dir + "/child" + n + ".err";
  return o;
}

}  // namespace

Child::Child(const std::vector<std::string>& argv, const std::string& output_dir,
             const std::vector<std::string>& env, const std::string& netns)
    : Process(ChildOptions(argv, output_dir, env, netns)) {}

bool Alive(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  std::string stat = ReadText("/proc/" + std::to_string(pid) + "/stat");
  auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

std::set<pid_t> ProbePids(const std::string& dir) {
  std::set<pid_t> pids;
  DIR* d = opendir(dir.c_str());
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.rfind("pid.", 0) == 0) pids.insert(std::atoi(ReadText(dir + "/" + name).c_str()));
  }
  closedir(d);
  return pids;
}

bool WaitForFiles(const std::string& dir, const std::string& prefix, size_t n,
                  std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    size_t count = 0;
    if (DIR* d = opendir(dir.c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        const bool written = !name.ends_with(".tmp");  // the probe renames when done
        count += name.rfind(prefix, 0) == 0 && written;
      }
      closedir(d);
    }
    if (count >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

bool WaitGone(const std::set<pid_t>& pids, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    bool any = false;
    for (pid_t p : pids) any |= Alive(p);
    if (!any) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void KillAll(const std::set<pid_t>& pids) {
  for (pid_t p : pids) {
    if (p > 0 && Alive(p)) kill(p, SIGKILL);
  }
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json ReadJson(const std::string& path) { return nlohmann::json::parse(ReadText(path)); }

nlohmann::json ProbeEnv(const std::string& dir, const std::string& tag) {
  return ReadJson(dir + "/env." + tag + ".json").at("env");
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

nlohmann::json LastJsonLine(const std::string& text) {
  size_t end = text.size();
  while (end > 0) {
    const size_t nl = text.rfind('\n', end - 1);
    const size_t from = nl == std::string::npos ? 0 : nl + 1;
    const std::string line = text.substr(from, end - from);
    if (!line.empty() && line[0] == '{') {
      auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_object()) return j;
    }
    if (nl == std::string::npos) break;
    end = nl;
  }
  return nlohmann::json::object();
}

pid_t FindChildWithEnv(pid_t parent, const std::string& entry) {
  DIR* d = opendir("/proc");
  if (!d) return -1;
  pid_t found = -1;
  while (dirent* e = readdir(d)) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    const std::string stat = ReadText("/proc/" + std::to_string(pid) + "/stat");
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    int ppid = 0;
    char state = 0;
    if (std::sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) != 2 || ppid != parent) continue;
    const std::string env = ReadText("/proc/" + std::to_string(pid) + "/environ");
    size_t pos = 0;
    while (pos < env.size()) {
      const size_t zero = env.find('\0', pos);
      const size_t len = (zero == std::string::npos ? env.size() : zero) - pos;
      if (env.compare(pos, len, entry) == 0) found = pid;
      pos += len + 1;
    }
    if (found > 0) break;
  }
  closedir(d);
  return found;
}

}  // namespace flotilla::launch_test
