#include "launch/job_channel.h"

#include <nlohmann/json.hpp>

#include "flotilla/common/enforce.h"
#include "flotilla/common/logging.h"

namespace flotilla::launch {

namespace {
constexpr char kAbortKey[] = "abort";
constexpr char kAbortTicket[] = "abort_ticket";
constexpr char kSucceededKey[] = "trainers_ok";

std::string FinishedKey(int node) { return "finished/" + std::to_string(node); }
}  // namespace

StoreChannel::StoreChannel(Options options, std::shared_ptr<comm::Store> store,
                           std::shared_ptr<comm::Store> control)
    : options_(std::move(options)), store_(std::move(store)), control_(std::move(control)) {
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

void StoreChannel::Monitor() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    PollOnce();
    lock.lock();
    cv_.wait_for(lock, options_.poll, [this] { return stopping_; });
  }
}

void StoreChannel::PollOnce() {
  try {
    succeeded_ = static_cast<int>(store_->add(kSucceededKey, 0));
    if (!store_->check({kAbortKey})) return;
    auto j = nlohmann::json::parse(store_->getString(kAbortKey));
    AbortNotice notice{j.at("node").get<int>(), j.at("exit_code").get<int>(),
                       j.at("message").get<std::string>()};
    std::lock_guard<std::mutex> lock(mu_);
    if (notice.node != options_.node && !peer_abort_) peer_abort_ = notice;
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || peer_abort_) return;
    peer_abort_ = AbortNotice{0, 1, StrCat("lost the rendezvous store at ", options_.store_address,
                                           " (has node 0's launcher stopped?): ", e.what())};
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
  }
  try {
    if (control_->add(kAbortTicket, 1) != 1) return;  // another node was first
    nlohmann::json j = {{"node", notice.node}, {"exit_code", notice.exit_code},
                        {"message", notice.message}};
    control_->setString(kAbortKey, j.dump());
  } catch (const std::exception& e) {
    log::Warn("could not tell the other nodes that this node aborted: {}", e.what());
  }
}

std::optional<AbortNotice> StoreChannel::PeerAbort() {
  std::lock_guard<std::mutex> lock(mu_);
  return peer_abort_;
}

void StoreChannel::Finish() {
  Stop();
  try {
    control_->setString(FinishedKey(options_.node), "1");
    if (options_.node != 0) return;
    std::vector<std::string> keys;
    for (int i = 0; i < options_.nnodes; ++i) keys.push_back(FinishedKey(i));
    control_->wait(keys, options_.finish_timeout);
  } catch (const std::exception& e) {
    log::Warn("not every node reported the end of its processes; closing the store anyway: {}",
              e.what());
  }
}

}  // namespace flotilla::launch
