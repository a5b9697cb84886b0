// The elastic rendezvous and channel against a real etcd, without processes:
// nodes (as threads) agree on worlds, a lost node or a newcomer is reported
// and the next Join forms the new world, and a finished job leaves no keys.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "elastic_test_util.h"
#include "flotilla/common/error.h"
#include "launch/elastic/elastic_rendezvous.h"
#include "launch/elastic/etcd_client.h"

namespace flotilla::launch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

class ElasticRendezvousTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = elastic_test::EtcdServer::Start();
    if (!etcd_) GTEST_SKIP() << elastic_test::kEtcdBinary << " is not installed";
  }

  LaunchOptions Options(const std::string& host, const std::string& np, int ttl = 2) {
    LaunchOptions o;
    o.elastic_ttl = std::chrono::seconds(ttl);
    o.elastic_server = "etcd://" + etcd_->endpoint();
    o.job_id = "rdzv";
    o.np = np;
    o.host = host;
    o.rendezvous_timeout = std::chrono::seconds(30);
    return o;
  }
  std::unique_ptr<Rendezvous> Node(const std::string& host, const std::string& np, int ttl = 2) {
    return MakeElasticRendezvous(Options(host, np, ttl));
  }

  // One trainer per node at a fixed port (nothing is started).
  static NodePlanner Planner() {
    return [](const NodeLayout& layout) {
      NodePlan plan;
      plan.nodes = layout.nodes;
      plan.node_index = layout.node_index;
      plan.local = {ProcessSpec{Role::kTrainer, 0, 0, 0, layout.nodes[0], 4000, {"0"}}};
      plan.world_trainers = 1;
      return plan;
    };
  }

  static bool WaitPeerAbort(JobChannel& channel, milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!channel.PeerAbort()) {
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return true;
  }

  size_t JobKeys() {
    EtcdClient etcd(EtcdOptions{ParseEtcdEndpoints(etcd_->endpoint())});
    return etcd.GetPrefix("/flotilla/rdzv/").kvs.size();
  }

  std::unique_ptr<elastic_test::EtcdServer> etcd_;
};

TEST_F(ElasticRendezvousTest, WorldsFollowLossesAndJoins) {
  auto a = Node("127.0.0.1", "1:2");
  auto b = Node("127.0.0.2", "1:2");
  auto joined_b = std::async(std::launch::async, [&] { return b->Join(Planner()); });
  World wa = a->Join(Planner());
  World wb = joined_b.get();
  EXPECT_EQ(wa.spec.generation, 0);
  EXPECT_EQ(wb.spec.generation, 0);
  EXPECT_EQ(wa.spec.nodes, wb.spec.nodes);
  EXPECT_EQ(wa.spec.master, wb.spec.master);
  EXPECT_NE(wa.spec.node_index, wb.spec.node_index);
  ASSERT_EQ(wa.spec.trainers.size(), 2u);
  EXPECT_EQ(wa.spec.TrainerEndpoints(), wb.spec.TrainerEndpoints());

  // b's launcher goes away: a learns of it and forms a world of one.
  wb.channel.reset();
  b.reset();  // revokes b's lease
  ASSERT_TRUE(WaitPeerAbort(*wa.channel, milliseconds(5000)));
  EXPECT_TRUE(wa.channel->Restart(1));
  wa.channel->Finish();
  wa = a->Join(Planner());
  EXPECT_EQ(wa.spec.generation, 1);
  EXPECT_EQ(wa.spec.nodes, (std::vector<std::string>{"127.0.0.1"}));
  EXPECT_EQ(wa.spec.node_index, 0);

  // c arrives: a stops for the scale-out; both meet in world 2, a keeps rank 0.
  auto c = Node("127.0.0.3", "1:2");
  auto joined_c = std::async(std::launch::async, [&] { return c->Join(Planner()); });
  ASSERT_TRUE(WaitPeerAbort(*wa.channel, milliseconds(5000)));
  EXPECT_TRUE(wa.channel->Restart(1));
  wa.channel->Finish();
  wa = a->Join(Planner());
  World wc = joined_c.get();
  EXPECT_EQ(wa.spec.generation, 2);
  EXPECT_EQ(wc.spec.generation, 2);
  EXPECT_EQ(wa.spec.nodes, (std::vector<std::string>{"127.0.0.1", "127.0.0.3"}));
  EXPECT_EQ(wc.spec.node_index, 1);
  EXPECT_EQ(wc.spec.trainers[1].id, 1);

  // Both succeed: the job is done and its keys are gone.
  EXPECT_FALSE(wc.channel->Restart(0));
  wc.channel->Finish();
  EXPECT_FALSE(wa.channel->Restart(0));
  wa.channel->Finish();
  EXPECT_EQ(JobKeys(), 0u);
}

TEST_F(ElasticRendezvousTest, ForceClearsAStaleJob) {
  EtcdClient etcd(EtcdOptions{ParseEtcdEndpoints(etcd_->endpoint())});
  const std::string stale = R"({"gen":7,"members":[{"host":"10.9.9.9","lease":1}]})";
  etcd.Put("/flotilla/rdzv/world", stale);
  etcd.Put("/flotilla/rdzv/gen/7/abort", "{}");
  {
    // Without --force the stale world is outlived: the next generation.
    World w = Node("127.0.0.1", "1")->Join(Planner());
    EXPECT_EQ(w.spec.generation, 8);
    EXPECT_EQ(w.spec.nodes, (std::vector<std::string>{"127.0.0.1"}));
  }
  etcd.Put("/flotilla/rdzv/world", stale);
  LaunchOptions o = Options("127.0.0.1", "1");
  o.force = true;
  auto forced = MakeElasticRendezvous(o);
  World w = forced->Join(Planner());
  EXPECT_EQ(w.spec.generation, 0);  // a fresh job
  EXPECT_FALSE(etcd.Get("/flotilla/rdzv/gen/7/abort").has_value());
}

TEST_F(ElasticRendezvousTest, ARealFailureIsNotARestart) {
  auto a = Node("127.0.0.1", "1", /*ttl=*/1);
  World w = a->Join(Planner());
  const auto start = Clock::now();
  EXPECT_FALSE(w.channel->Restart(3));  // no node was lost: the failure is final
  EXPECT_GE(Clock::now() - start, milliseconds(1000));
  w.channel->Finish();
}

TEST_F(ElasticRendezvousTest, TooFewNodesTimesOutNamingThePresent) {
  LaunchOptions o = Options("127.0.0.1", "2");
  o.rendezvous_timeout = milliseconds(1500);
  try {
    MakeElasticRendezvous(o)->Join(Planner());
    FAIL() << "no timeout";
  } catch (const DeadlineExceeded& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at least 2"), std::string::npos) << e.what();
  }
}

TEST_F(ElasticRendezvousTest, ANodeBeyondMaxWaitsAsAStandby) {
  auto a = Node("127.0.0.1", "1");
  World w = a->Join(Planner());
  LaunchOptions o = Options("127.0.0.2", "1");
  o.rendezvous_timeout = milliseconds(1500);
  try {
    MakeElasticRendezvous(o)->Join(Planner());
    FAIL() << "the standby joined a full world";
  } catch (const DeadlineExceeded& e) {
    EXPECT_NE(std::string(e.what()).find("standby"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(w.channel->PeerAbort().has_value()) << "a standby disturbed a full world";
}

}  // namespace
}  // namespace flotilla::launch
