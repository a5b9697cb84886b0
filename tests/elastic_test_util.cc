#include "elastic_test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>
#include <vector>

#include "launch/elastic/http_client.h"
#include "launch_test_util.h"

namespace flotilla::elastic_test {

namespace {

bool Answers(int port) {
  try {
    auto r = launch::HttpPost("127.0.0.1", port, "/v3/kv/range", R"({"key":"AA=="})",
                              std::chrono::milliseconds(500));
    return r.status == 200;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::unique_ptr<EtcdServer> EtcdServer::Start() {
  if (access(kEtcdBinary, X_OK) != 0) return nullptr;
  std::unique_ptr<EtcdServer> s(new EtcdServer);
  char tmpl[] = "/tmp/flotilla_etcd.XXXXXX";
  s->dir_ = mkdtemp(tmpl);
  s->client_port_ = launch_test::FreePort();
  const int peer = launch_test::FreePort();
  const std::string client = "http://127.0.0.1:" + std::to_string(s->client_port_);
  const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer);
  std::vector<std::string> args = {kEtcdBinary, "--data-dir", s->dir_ + "/data",
      "--listen-client-urls", client, "--advertise-client-urls", client,
      "--listen-peer-urls", peer_url, "--name", "t", "--initial-advertise-peer-urls", peer_url,
      "--initial-cluster", "t=" + peer_url, "--log-level", "error"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log = s->dir_ + "/etcd.log";
  s->pid_ = fork();
  if (s->pid_ == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!Answers(s->client_port_)) {
    if (std::chrono::steady_clock::now() > deadline || waitpid(s->pid_, nullptr, WNOHANG) != 0) {
      throw std::runtime_error("etcd did not come up on port " + std::to_string(s->client_port_) +
                               "; see " + log);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return s;
}

std::set<pid_t> ProcessesMentioning(const std::string& text) {
  std::set<pid_t> found;
  DIR* proc = opendir("/proc");
  while (dirent* e = proc ? readdir(proc) : nullptr) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0 || pid == getpid()) continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(text) != std::string::npos && launch_test::Alive(pid)) found.insert(pid);
  }
  if (proc) closedir(proc);
  return found;
}

EtcdServer::~EtcdServer() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    for (int i = 0; i < 50 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (kill(pid_, 0) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  if (!dir_.empty()) std::system(("rm -rf '" + dir_ + "'").c_str());
}

}  // namespace flotilla::elastic_test
