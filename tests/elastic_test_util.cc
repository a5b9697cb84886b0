#include "elastic_test_util.h"

#include <dirent.h>
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
  testing::ProcessOptions etcd{std::move(args)};
  etcd.stdout_to = testing::Output::kFile;
  etcd.stdout_path = s->dir_ + "/etcd.log";
  etcd.stderr_to = testing::Output::kStdout;
  s->process_.emplace(std::move(etcd));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!Answers(s->client_port_)) {
    if (std::chrono::steady_clock::now() > deadline ||
        s->process_->Wait(std::chrono::milliseconds(0))) {
      throw std::runtime_error("etcd did not come up on port " + std::to_string(s->client_port_) +
                               "; see " + s->dir_ + "/etcd.log");
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
  if (process_) process_->Terminate(std::chrono::seconds(5));
  if (!dir_.empty()) std::system(("rm -rf '" + dir_ + "'").c_str());
}

}  // namespace flotilla::elastic_test
