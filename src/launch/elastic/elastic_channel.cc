#include "launch/elastic/elastic_channel.h"

#include <nlohmann/json.hpp>

#include "flotilla/common/enforce.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/strings.h"

namespace flotilla::launch {

using Clock = std::chrono::steady_clock;

ElasticChannel::ElasticChannel(Options options, std::shared_ptr<EtcdClient> etcd, ElasticKeys keys)
    : options_(std::move(options)), etcd_(std::move(etcd)), keys_(std::move(keys)) {
  monitor_ = std::thread([this] { Monitor(); });
}

ElasticChannel::~ElasticChannel() { Stop(); }

void ElasticChannel::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (monitor_.joinable()) monitor_.join();
}

// Wakes on every change of the job's keys; re-reads the state then. While
// etcd is unreachable the processes keep running (they do not need it); the
// monitor warns every 10 s and retries.
void ElasticChannel::Monitor() {
  std::unique_ptr<EtcdWatch> watch;
  Clock::time_point next_warning{};
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    try {
      if (!watch) watch = etcd_->WatchPrefix(keys_.prefix);
      Evaluate();
      watch->Next(options_.poll);
    } catch (const std::exception& e) {
      if (Clock::now() >= next_warning) {
        log::Warn("elastic job: cannot watch the membership in etcd (retrying): {}", e.what());
        next_warning = Clock::now() + std::chrono::seconds(10);
      }
      watch.reset();
      std::this_thread::sleep_for(options_.poll);
    }
    lock.lock();
  }
}

void ElasticChannel::Evaluate() {
  CheckMembers();
  CheckAbort();
}

void ElasticChannel::CheckMembers() {
  // Members first, then the oks: a finishing (or stopping) node writes its
  // key before it revokes its lease, so a member missing here has it below.
  std::vector<MemberId> alive;
  for (const auto& kv : etcd_->GetPrefix(keys_.nodes()).kvs) {
    alive.push_back(DecodeMember(kv.key, kv.value, kv.lease, kv.create_revision).id);
  }
  // A member that finished, or that stopped the job for good after a
  // failure (its launcher then leaves too), is no lost node.
  std::set<std::string> ok;
  const int64_t gen = options_.world.gen;
  for (const std::string& prefix : {keys_.oks(gen), keys_.stops(gen)}) {
    for (const auto& kv : etcd_->GetPrefix(prefix).kvs) ok.insert(kv.key.substr(prefix.size()));
  }
  const auto& members = options_.world.members;
  for (size_t i = 0; i < members.size(); ++i) {
    if (Contains(alive, members[i]) || ok.count(members[i].host)) continue;
    Report({static_cast<int>(i), 1, StrCat("node ", i, " (", members[i].host,
                                           ") left the job: its launcher stopped or its lease "
                                           "lapsed")}, true);
    return;
  }
  auto target = etcd_->Get(keys_.target());
  const int cap = WorldCap({options_.min_nodes, options_.max_nodes},
                           target ? std::optional<std::string>(target->value) : std::nullopt);
  if (static_cast<int>(members.size()) > cap) {
    Report({-1, 1, StrCat("the job scales in to ", cap, " node(s) (--scale)")}, true);
    return;
  }
  if (static_cast<int>(members.size()) < cap) {
    for (const auto& id : alive) {
      if (Contains(members, id)) continue;
      Report({-1, 1, StrCat("node ", id.host, " joined: the job scales out")}, true);
      return;
    }
  }
  auto world = etcd_->Get(keys_.world());
  if (world && DecodeWorld(world->value, world->mod_revision).gen != options_.world.gen) {
    Report({-1, 1, "the other nodes formed a new world"}, true);
  }
}

void ElasticChannel::CheckAbort() {
  auto kv = etcd_->Get(keys_.abort(options_.world.gen));
  if (!kv) return;
  auto j = nlohmann::json::parse(kv->value);
  AbortNotice notice{j.at("node").get<int>(), j.at("exit_code").get<int>(),
                     j.at("message").get<std::string>()};
  if (notice.node != options_.node_index) Report(notice, false);
}

void ElasticChannel::Report(const AbortNotice& notice, bool membership_changed) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (membership_changed && !changed_) {
      changed_ = true;
      log::Warn("elastic job, world {}: {}", options_.world.gen, notice.message);
    }
    if (!peer_abort_ && !aborted_here_) peer_abort_ = notice;
  }
  cv_.notify_all();
}

void ElasticChannel::Abort(const AbortNotice& notice) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_here_ || peer_abort_) return;
    aborted_here_ = true;
  }
  try {
    nlohmann::json j = {{"node", notice.node}, {"exit_code", notice.exit_code},
                        {"message", notice.message}};
    etcd_->PutIfAbsent(keys_.abort(options_.world.gen), j.dump());
  } catch (const std::exception& e) {
    log::Warn("could not tell the other nodes that this node aborted: {}", e.what());
  }
}

std::optional<AbortNotice> ElasticChannel::PeerAbort() {
  std::lock_guard<std::mutex> lock(mu_);
  return peer_abort_;
}

bool ElasticChannel::Restart(int exit_code) {
  exit_code_ = exit_code;
  if (exit_code == 0) return false;
  // A trainer fails the moment its peer dies; etcd notices the loss only
  // when the peer's lease lapses.
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, options_.ttl + std::chrono::milliseconds(2000), [this] { return changed_; });
  if (changed_) return true;
  log::Error("elastic job: the failure was not caused by a lost node; stopping");
  lock.unlock();
  // Before this launcher's lease goes: the others, still waiting for a
  // lost node, must not take its leaving for one and start a new world.
  try {
    etcd_->Put(keys_.stopped(options_.world.gen, options_.self.host), "1");
  } catch (const std::exception& e) {
    log::Warn("could not tell the other nodes that the job stops: {}", e.what());
  }
  return false;
}

void ElasticChannel::Finish() {
  Stop();
  if (exit_code_ != 0) return;
  try {
    etcd_->Put(keys_.ok(options_.world.gen, options_.self.host), "1");
    if (options_.node_index == 0) CloseJob();
  } catch (const std::exception& e) {
    log::Warn("could not mark the elastic job finished in etcd: {}", e.what());
  }
}

// Node 0: once every member finished (or is gone), the job is done and its
// keys go.
void ElasticChannel::CloseJob() {
  const auto deadline = Clock::now() + options_.finish_timeout;
  while (Clock::now() < deadline) {
    size_t ok = etcd_->GetPrefix(keys_.oks(options_.world.gen)).kvs.size();
    if (ok >= options_.world.members.size()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  etcd_->Put(keys_.done(), "1");
  etcd_->DeletePrefix(keys_.prefix);
  log::Info("elastic job {} finished; its keys are removed from etcd", keys_.prefix);
}

}  // namespace flotilla::launch
