#include "launch/job_channel.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "flotilla/common/enforce.h"
#include "flotilla/common/logging.h"

namespace flotilla::launch {

namespace {
constexpr char kAbortKey[] = "abort";
constexpr char kAbortTicket[] = "abort_ticket";
constexpr char kSucceededKey[] = "trainers_ok";

std::string FinishedKey(int node) { return "finished/" + std::to_string(node); }
std::string HeartbeatKey(int node) { return "heartbeat/" + std::to_string(node); }
}  // namespace

StoreChannel::StoreChannel(Options options, std::shared_ptr<comm::Store> store,
                           std::shared_ptr<comm::Store> control)
    : options_(std::move(options)), store_(std::move(store)), control_(std::move(control)) {
  const auto now = std::chrono::steady_clock::now();
  beats_.assign(options_.nnodes, -1);
  beat_seen_.assign(options_.nnodes, now);
  next_beat_ = now;
  monitor_ = std::thread([this] { Monitor(); });
}

StoreChannel::~StoreChannel() { Stop(); }

void StoreChannel::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (monitor_.joinable()) monitor_.join();
}

// Also publishes this node's abort: the watchdog hands it over and goes
// on stopping the processes, whatever the network does meanwhile.
void StoreChannel::Monitor() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    std::optional<AbortNotice> abort = std::exchange(pending_abort_, std::nullopt);
    const bool stop = stopping_;
    lock.unlock();
    if (abort) PublishAbort(*abort);
    if (stop) return;
    PollOnce();
    lock.lock();
    cv_.wait_for(lock, options_.poll, [this] { return stopping_ || pending_abort_.has_value(); });
  }
}

void StoreChannel::SetPeerAbort(const AbortNotice& notice) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!stopping_ && !peer_abort_) peer_abort_ = notice;
}

void StoreChannel::PollOnce() {
  try {
    succeeded_ = static_cast<int>(store_->add(kSucceededKey, 0));
    if (std::chrono::steady_clock::now() >= next_beat_) Heartbeat();
    if (!store_->check({kAbortKey})) return;
    auto j = nlohmann::json::parse(store_->getString(kAbortKey));
    AbortNotice notice{j.at("node").get<int>(), j.at("exit_code").get<int>(),
                       j.at("message").get<std::string>()};
    if (notice.node != options_.node) SetPeerAbort(notice);
  } catch (const std::exception& e) {
    store_lost_ = true;
    SetPeerAbort({0, 1, StrCat("lost the rendezvous store at ", options_.store_address,
                               " (has node 0's launcher stopped?): ", e.what())});
  }
}

void StoreChannel::Heartbeat() {
  const auto now = std::chrono::steady_clock::now();
  next_beat_ = now + options_.heartbeat;
  store_->add(HeartbeatKey(options_.node), 1);
  for (int n = 0; n < options_.nnodes; ++n) {
    if (n == options_.node) continue;
    const int64_t beat = store_->add(HeartbeatKey(n), 0);
    if (beat != beats_[n]) {
      beats_[n] = beat;
      beat_seen_[n] = now;
      continue;
    }
    if (now - beat_seen_[n] < options_.node_timeout || store_->check({FinishedKey(n)})) continue;
    const auto silent = std::chrono::duration_cast<std::chrono::seconds>(now - beat_seen_[n]);
    SetPeerAbort({n, 1, StrCat("node ", n, " (", n < static_cast<int>(options_.nodes.size())
                                                     ? options_.nodes[n] : "?",
                               ") has not been heard from for ", silent.count(),
                               " s: its launcher was killed or its machine is unreachable")});
  }
}

void StoreChannel::TrainerSucceeded() {
  try {
    succeeded_ = static_cast<int>(control_->add(kSucceededKey, 1));
  } catch (const std::exception& e) {
    log::Warn("could not report a finished trainer to the store: {}", e.what());
  }
}

void StoreChannel::Abort(const AbortNotice& notice) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_here_ || peer_abort_) return;  // the job is already going down
    aborted_here_ = true;
    pending_abort_ = notice;
  }
  cv_.notify_all();
}

// On the monitor thread, through its short-timeout connection.
void StoreChannel::PublishAbort(const AbortNotice& notice) {
  if (store_lost_) {
    log::Warn("could not tell the other nodes that this node aborted: the rendezvous store at {} "
              "is lost", options_.store_address);
    return;
  }
  try {
    if (store_->add(kAbortTicket, 1) != 1) return;  // another node was first
    nlohmann::json j = {{"node", notice.node}, {"exit_code", notice.exit_code},
                        {"message", notice.message}};
    store_->setString(kAbortKey, j.dump());
  } catch (const std::exception& e) {
    store_lost_ = true;
    log::Warn("could not tell the other nodes that this node aborted: {}", e.what());
  }
}

std::optional<AbortNotice> StoreChannel::PeerAbort() {
  std::lock_guard<std::mutex> lock(mu_);
  return peer_abort_;
}

void StoreChannel::Finish() {
  Stop();
  if (store_lost_) return;  // nobody to tell (a lost link must not hold the launcher)
  try {
    store_->setString(FinishedKey(options_.node), "1");
    if (options_.node == 0) WaitForOtherNodes();
  } catch (const std::exception& e) {
    log::Warn("could not wait for the other nodes to finish; closing the store anyway: {}",
              e.what());
  }
}

// Node 0 keeps the store up while other nodes' processes may still use it:
// until every node has finished, or has gone silent for node_timeout (a
// lost node never finishes), or finish_timeout has passed.
void StoreChannel::WaitForOtherNodes() {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  // Continue from what the (now stopped) monitor saw: a node already silent
  // for a while is not waited for again from scratch.
  std::vector<int64_t>& beats = beats_;
  std::vector<Clock::time_point>& seen = beat_seen_;
  while (Clock::now() - start < options_.finish_timeout) {
    bool waiting = false;
    for (int n = 0; n < options_.nnodes; ++n) {
      if (n == options_.node || control_->check({FinishedKey(n)})) continue;
      const int64_t beat = control_->add(HeartbeatKey(n), 0);
      if (beat != beats[n]) beats[n] = beat, seen[n] = Clock::now();
      waiting |= Clock::now() - seen[n] < options_.node_timeout;
    }
    if (!waiting) return;
    std::this_thread::sleep_for(options_.poll);
  }
  log::Warn("not every node reported the end of its processes within {} s; closing the store",
            options_.finish_timeout.count() / 1000);
}

}  // namespace flotilla::launch
