#include "launch/elastic/node_registration.h"

#include "flotilla/common/enforce.h"
#include "flotilla/common/logging.h"

namespace flotilla::launch {

NodeRegistration::NodeRegistration(std::shared_ptr<EtcdClient> etcd, std::string key,
                                   std::string value, std::chrono::seconds ttl,
                                   std::chrono::milliseconds wait)
    : etcd_(std::move(etcd)), key_(std::move(key)), value_(std::move(value)), ttl_(ttl) {
  Register(wait);
  thread_ = std::thread([this] { KeepAlive(); });
}

NodeRegistration::~NodeRegistration() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  try {
    etcd_->RevokeLease(lease_);
  } catch (const std::exception& e) {
    log::Warn("could not revoke lease of {} (it lapses in {} s): {}", key_, ttl_.count(), e.what());
  }
}

void NodeRegistration::Register(std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  const int64_t lease = etcd_->GrantLease(ttl_.count());
  while (!etcd_->PutIfAbsent(key_, value_, lease)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      etcd_->RevokeLease(lease);
      FLOTILLA_THROW(AlreadyExists, "another launcher is registered as ", key_,
                     " in etcd at ", etcd_->endpoints(),
                     "; give each node its own --host, or pass --force to clear a stale job");
    }
    etcd_->KeepAlive(lease);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  lease_ = lease;
}

// A lease that lapsed (the launcher stalled longer than the TTL, or etcd
// lost it) is replaced: the node comes back as a new member.
void NodeRegistration::Renew() {
  if (etcd_->KeepAlive(lease_) > 0) return;
  log::Warn("the lease of {} lapsed; registering again", key_);
  Register(std::chrono::milliseconds(2 * ttl_));
}

void NodeRegistration::KeepAlive() {
  const auto period = std::chrono::duration_cast<std::chrono::milliseconds>(ttl_) / 3;
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, period, [this] { return stopping_; })) {
    lock.unlock();
    try {
      Renew();
    } catch (const std::exception& e) {
      log::Warn("keeping {} alive in etcd failed: {}", key_, e.what());
    }
    lock.lock();
  }
}

}  // namespace flotilla::launch
