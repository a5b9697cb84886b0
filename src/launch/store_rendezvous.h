// StoreRendezvous: what the static and the master rendezvous share — node 0
// hosts the job's TCP store, the others connect; nodes publish their
// processes, wait for one another (naming the missing), agree, and start
// together; then a StoreChannel keeps them in touch. Private to launch.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "flotilla/comm/store.h"
#include "flotilla/comm/tcp_store.h"
#include "launch/rendezvous.h"

namespace flotilla::launch {

class StoreRendezvous : public Rendezvous {
 protected:
  using Clock = std::chrono::steady_clock;
  using milliseconds = std::chrono::milliseconds;

  explicit StoreRendezvous(const LaunchOptions& options);

  // Node 0: serves the store at host:port (0 = any); returns "host:port".
  std::string HostStore(const std::string& host, int port);
  // Connects to the store at `address`, retrying until `connect_timeout`.
  // `who` names this node in the error.
  std::shared_ptr<comm::Store> Connect(const std::string& who, const std::string& address,
                                       milliseconds connect_timeout);
  // Waits until key(i) exists for every i < names.size(), stopping early when
  // a node reported that it failed. Throws DeadlineExceeded naming
  // names[i] of the missing after `deadline`.
  void WaitForNodes(comm::Store& store, const std::vector<std::string>& names, const char* stage,
                    std::string (*key)(int), Clock::time_point deadline);
  // Tells the others this node cannot join (they stop waiting).
  void PublishFailure(comm::Store& store, const std::string& who, const std::string& what);
  // A one-node job: the plan is the world.
  World SingleNode(const NodePlan& plan, const std::string& address);
  // Publishes this node's processes, merges every node's, waits until all
  // agree, and opens the channel.
  World Exchange(const NodePlan& plan, const std::string& address,
                 std::shared_ptr<comm::Store> store, Clock::time_point deadline);

  milliseconds timeout_;
  milliseconds node_timeout_;
  std::string token_;  // the job secret; "" = an insecure job
  TlsFiles tls_;       // the job's TLS files; none = plaintext
  std::unique_ptr<comm::TCPStoreServer> server_;  // node 0 only; lives as long as the job
};

// Store keys and names shared by the rendezvous implementations.
std::string NodeKey(int node);
std::string ReadyKey(int node);
std::vector<std::string> NodeNames(const std::vector<std::string>& hosts);

}  // namespace flotilla::launch
