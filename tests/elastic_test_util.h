// A real etcd for the elastic tests: Debian's /usr/bin/etcd on loopback at
// free ports with a data directory of its own. The destructor ends it
// (SIGTERM, then SIGKILL after 5 s) and removes the data directory.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <set>
#include <string>

#include "flotilla/testing/process.h"

namespace flotilla::elastic_test {

constexpr char kEtcdBinary[] = "/usr/bin/etcd";

class EtcdServer {
 public:
  // Starts etcd and waits until it answers (up to 30 s). Returns nullptr when
  // /usr/bin/etcd is not installed; throws std::runtime_error when it does
  // not come up.
  static std::unique_ptr<EtcdServer> Start();
  ~EtcdServer();

  // "127.0.0.1:PORT"
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_port_); }
  pid_t pid() const { return process_->pid(); }
  int client_port() const { return client_port_; }

 private:
  EtcdServer() = default;
  std::optional<testing::Process> process_;
  int client_port_ = 0;
  std::string dir_;
};

// Pids of live processes whose command line contains `text` (a test's
// unique temporary directory finds the launchers and their trainers).
std::set<pid_t> ProcessesMentioning(const std::string& text);

}  // namespace flotilla::elastic_test
