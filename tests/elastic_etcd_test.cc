// The etcd v3 client against a real etcd on loopback: keys, prefixes,
// transactions, leases that expire, watches, failover and the error for an
// unreachable etcd.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "elastic_test_util.h"
#include "launch_test_util.h"
#include "flotilla/common/error.h"
#include "launch/elastic/etcd_client.h"

namespace flotilla::launch {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

class EtcdClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = elastic_test::EtcdServer::Start().release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (server_ == nullptr) GTEST_SKIP() << "etcd is not installed (" << elastic_test::kEtcdBinary
                                         << "; Debian package etcd-server)";
    client_ = std::make_unique<EtcdClient>(EtcdOptions{ParseEtcdEndpoints(server_->endpoint())});
    prefix_ = std::string("/test/") + ::testing::UnitTest::GetInstance()->current_test_info()->name() + "/";
  }

  static elastic_test::EtcdServer* server_;
  std::unique_ptr<EtcdClient> client_;
  std::string prefix_;
};

elastic_test::EtcdServer* EtcdClientTest::server_ = nullptr;

TEST(EtcdCodecTest, Base64RoundTripsEveryLength) {
  EXPECT_EQ(EtcdBase64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(EtcdBase64Encode("fo"), "Zm8=");
  std::string bytes;
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(EtcdBase64Decode(EtcdBase64Encode(bytes)), bytes) << i;
    bytes += static_cast<char>(i * 37);
  }
  EXPECT_EQ(PrefixRangeEnd("/a/"), "/a0");
}

TEST(EtcdCodecTest, ParsesEndpointLists) {
  auto eps = ParseEtcdEndpoints("etcd://10.0.0.1:2379,10.0.0.2:2380");
  ASSERT_EQ(eps.size(), 2u);
  EXPECT_EQ(eps[1].ToString(), "10.0.0.2:2380");
  EXPECT_EQ(ParseEtcdEndpoints("127.0.0.1:1").at(0).port, 1);
  EXPECT_THROW(ParseEtcdEndpoints("etcd://"), InvalidArgument);
  EXPECT_THROW(ParseEtcdEndpoints("etcd://host"), InvalidArgument);
}

TEST_F(EtcdClientTest, PutGetPrefixDelete) {
  client_->Put(prefix_ + "a", std::string("one\0two", 7));
  client_->Put(prefix_ + "b", "2");
  client_->Put(prefix_ + "b", "3");
  auto a = client_->Get(prefix_ + "a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->value, std::string("one\0two", 7));
  EXPECT_FALSE(client_->Get(prefix_ + "missing").has_value());
  RangeResult all = client_->GetPrefix(prefix_);
  ASSERT_EQ(all.kvs.size(), 2u);
  EXPECT_EQ(all.kvs[1].value, "3");
  EXPECT_GT(all.kvs[1].mod_revision, all.kvs[1].create_revision);
  EXPECT_GE(all.revision, all.kvs[1].mod_revision);
  EXPECT_EQ(client_->DeletePrefix(prefix_), 2);
  EXPECT_TRUE(client_->GetPrefix(prefix_).kvs.empty());
}

TEST_F(EtcdClientTest, TxnPutsOnlyAtTheExpectedRevision) {
  EXPECT_TRUE(client_->PutIfAbsent(prefix_ + "k", "first"));
  EXPECT_FALSE(client_->PutIfAbsent(prefix_ + "k", "second"));
  auto kv = client_->Get(prefix_ + "k");
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->value, "first");
  EXPECT_FALSE(client_->PutIfModRevision(prefix_ + "k", "stale", kv->mod_revision - 1));
  EXPECT_TRUE(client_->PutIfModRevision(prefix_ + "k", "third", kv->mod_revision));
  EXPECT_EQ(client_->Get(prefix_ + "k")->value, "third");
}

TEST_F(EtcdClientTest, LeaseKeepsKeyAliveUntilItLapses) {
  const int64_t lease = client_->GrantLease(2);
  client_->Put(prefix_ + "node", "x", lease);
  EXPECT_EQ(client_->Get(prefix_ + "node")->lease, lease);
  // Kept alive past its TTL...
  for (int i = 0; i < 6; ++i) {
    EXPECT_GT(client_->KeepAlive(lease), 0);
    std::this_thread::sleep_for(milliseconds(500));
  }
  EXPECT_TRUE(client_->Get(prefix_ + "node").has_value());
  // ...then left alone: the key goes with the lease.
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (client_->Get(prefix_ + "node") && Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_FALSE(client_->Get(prefix_ + "node").has_value());
  EXPECT_EQ(client_->KeepAlive(lease), 0);
}

TEST_F(EtcdClientTest, RevokeDeletesAtOnce) {
  const int64_t lease = client_->GrantLease(30);
  client_->Put(prefix_ + "node", "x", lease);
  client_->RevokeLease(lease);
  EXPECT_FALSE(client_->Get(prefix_ + "node").has_value());
  client_->RevokeLease(lease);  // gone already: fine
}

TEST_F(EtcdClientTest, WatchSeesPutsAndDeletes) {
  auto watch = client_->WatchPrefix(prefix_);
  EXPECT_TRUE(watch->Next(milliseconds(200)).empty());
  std::thread writer([&] {
    client_->Put(prefix_ + "w", "1");
    client_->Delete(prefix_ + "w");
  });
  std::vector<WatchEvent> events;
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (events.size() < 2 && Clock::now() < deadline) {
    auto more = watch->Next(milliseconds(500));
    events.insert(events.end(), more.begin(), more.end());
  }
  writer.join();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_FALSE(events[0].deleted);
  EXPECT_EQ(events[0].kv.key, prefix_ + "w");
  EXPECT_EQ(events[0].kv.value, "1");
  EXPECT_TRUE(events[1].deleted);
}

TEST_F(EtcdClientTest, WatchFromARevisionReplaysHistory) {
  client_->Put(prefix_ + "h", "old");
  const int64_t rev = client_->Get(prefix_ + "h")->mod_revision;
  client_->Put(prefix_ + "h", "new");
  auto events = client_->WatchPrefix(prefix_, rev)->Next(milliseconds(2000));
  ASSERT_GE(events.size(), 1u);
  EXPECT_EQ(events[0].kv.value, "old");
}

TEST_F(EtcdClientTest, FailsOverToALiveEndpoint) {
  const int dead = launch_test::FreePort();
  EtcdClient both(EtcdOptions{ParseEtcdEndpoints("etcd://127.0.0.1:" + std::to_string(dead) + "," +
                                                 server_->endpoint())});
  both.Put(prefix_ + "f", "ok");
  EXPECT_EQ(both.Get(prefix_ + "f")->value, "ok");
}

TEST(EtcdUnreachableTest, ErrorNamesEveryAddressTried) {
  const int a = launch_test::FreePort(), b = launch_test::FreePort();
  const std::string ea = "127.0.0.1:" + std::to_string(a), eb = "127.0.0.1:" + std::to_string(b);
  EtcdClient client(EtcdOptions{ParseEtcdEndpoints("etcd://" + ea + "," + eb), milliseconds(500)});
  try {
    client.Put("/x", "y");
    FAIL() << "no error";
  } catch (const Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find(ea), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(eb), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flotilla::launch
