// NodeRegistration: this launcher's presence in an elastic job — the key
// nodes/<host> attached to a lease that a background thread keeps alive
// every TTL/3. When the launcher dies the keep-alives stop and etcd deletes
// the key after the TTL (that is how the other nodes learn of the loss); a
// clean exit revokes the lease so they learn at once.
//
// Thread-safe. The destructor stops the thread and revokes the lease.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "launch/elastic/etcd_client.h"

namespace flotilla::launch {

class NodeRegistration {
 public:
  // Registers `value` under `key` with a lease of `ttl`. When the key exists
  // (a launcher for this host is alive, or one just died and its lease has
  // not lapsed) it retries until `wait` has passed, then throws
  // AlreadyExists naming the key. Unavailable when etcd cannot be reached.
  NodeRegistration(std::shared_ptr<EtcdClient> etcd, std::string key, std::string value,
                   std::chrono::seconds ttl, std::chrono::milliseconds wait);
  ~NodeRegistration();
  NodeRegistration(const NodeRegistration&) = delete;
  NodeRegistration& operator=(const NodeRegistration&) = delete;

  // The current lease (a new one after the old lapsed and the key was put again).
  int64_t lease() const { return lease_; }

 private:
  void Register(std::chrono::milliseconds wait);
  void KeepAlive();
  void Renew();

  std::shared_ptr<EtcdClient> etcd_;
  const std::string key_;
  const std::string value_;
  const std::chrono::seconds ttl_;
  std::atomic<int64_t> lease_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace flotilla::launch
