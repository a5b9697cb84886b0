// StoreChannel under a lost link: the watchdog's Abort must never wait on
// the network, and Finish must not hang on a store that stopped answering.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "flotilla/comm/hash_store.h"
#include "flotilla/common/enforce.h"
#include "launch/job_channel.h"

namespace flotilla::launch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A store behind a dead link: every call waits `delay` (the client's
// timeout), then fails.
class DeadLinkStore : public comm::Store {
 public:
  explicit DeadLinkStore(milliseconds delay) : delay_(delay) {}
  void set(const std::string&, const comm::Bytes&) override { Fail(); }
  comm::Bytes get(const std::string&) override { Fail(); }
  int64_t add(const std::string&, int64_t) override { Fail(); }
  bool check(const std::vector<std::string>&) override { Fail(); }
  void wait(const std::vector<std::string>&, milliseconds) override { Fail(); }
  bool deleteKey(const std::string&) override { Fail(); }

 private:
  [[noreturn]] void Fail() {
    std::this_thread::sleep_for(delay_);
    FLOTILLA_THROW(Unavailable, "connection to the store lost");
  }
  milliseconds delay_;
};

StoreChannel::Options TwoNodes(int node) {
  StoreChannel::Options o;
  o.node = node;
  o.nnodes = 2;
  o.store_address = "10.0.0.1:6070";
  o.nodes = {"10.0.0.1", "10.0.0.2"};
  o.poll = milliseconds(20);
  o.heartbeat = milliseconds(50);
  return o;
}

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The monitor's short-timeout connection fails after 300 ms; the control
// connection (the rendezvous's, with its long timeout) would block 20 s.
TEST(StoreChannelTest, AbortAndFinishDoNotWaitOnALostStore) {
  StoreChannel channel(TwoNodes(1), std::make_shared<DeadLinkStore>(milliseconds(300)),
                       std::make_shared<DeadLinkStore>(std::chrono::seconds(20)));
  auto start = Clock::now();
  channel.Abort({1, 124, "node 1: the job stalled"});
  EXPECT_LT(SecondsSince(start), 0.1) << "Abort waited on the network";
  start = Clock::now();
  channel.Finish();
  EXPECT_LT(SecondsSince(start), 3.0) << "Finish waited on a lost store";
}

// With a store that answers, an abort still reaches the other node.
TEST(StoreChannelTest, AnAbortReachesTheOtherNode) {
  auto store = std::make_shared<comm::HashStore>();
  StoreChannel one(TwoNodes(1), store, store);
  StoreChannel zero(TwoNodes(0), store, store);
  one.Abort({1, 3, "rank 3 on node 1 exited with code 3"});
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (!zero.PeerAbort() && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_TRUE(zero.PeerAbort().has_value());
  EXPECT_EQ(zero.PeerAbort()->node, 1);
  EXPECT_EQ(zero.PeerAbort()->exit_code, 3);
  EXPECT_EQ(zero.PeerAbort()->message, "rank 3 on node 1 exited with code 3");
  EXPECT_FALSE(one.PeerAbort().has_value()) << "a node is not its own peer";
}

}  // namespace
}  // namespace flotilla::launch
