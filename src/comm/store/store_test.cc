#include <gtest/gtest.h>

#include <thread>

#include "flotilla/comm/file_store.h"
#include "flotilla/comm/hash_store.h"
#include "flotilla/comm/prefix_store.h"
#include "flotilla/comm/tcp_store.h"
#include "flotilla/common/error.h"
#include "flotilla/common/file_util.h"

namespace flotilla::comm {
namespace {

using namespace std::chrono_literals;

Bytes B(const std::string& s) { return Bytes(s.begin(), s.end()); }

// Runs the same contract against every store implementation.
class StoreContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string kind = GetParam();
    if (kind == "hash") {
      store_ = std::make_shared<HashStore>();
    } else if (kind == "file") {
      dir_ = ::testing::TempDir() + "flotilla_file_store_" + std::to_string(::getpid());
      RemoveAll(dir_);
      store_ = std::make_shared<FileStore>(dir_);
    } else if (kind == "prefix") {
      store_ = std::make_shared<PrefixStore>("job", std::make_shared<HashStore>());
    } else {
      server_ = TCPStoreServer::Start("127.0.0.1", 0);
      store_ = ConnectStore(server_->address());
    }
  }
  void TearDown() override {
    store_.reset();
    server_.reset();
    if (!dir_.empty()) RemoveAll(dir_);
  }
  // A second handle on the same store, as another rank would hold.
  std::shared_ptr<Store> Other() {
    if (server_) return ConnectStore(server_->address());
    if (!dir_.empty()) return std::make_shared<FileStore>(dir_);
    return store_;
  }

  std::shared_ptr<Store> store_;
  std::unique_ptr<TCPStoreServer> server_;
  std::string dir_;
};

TEST_P(StoreContract, SetGetCheckDelete) {
  EXPECT_FALSE(store_->check({"a"}));
  store_->setString("a", "one");
  store_->set("a/b", B(""));
  EXPECT_TRUE(store_->check({"a", "a/b"}));
  EXPECT_EQ(store_->getString("a"), "one");
  EXPECT_TRUE(store_->get("a/b").empty());
  store_->setString("a", "two");
  EXPECT_EQ(Other()->getString("a"), "two");
  EXPECT_TRUE(store_->deleteKey("a"));
  EXPECT_FALSE(store_->deleteKey("a"));
  EXPECT_FALSE(store_->check({"a"}));
}

TEST_P(StoreContract, AddIsAtomicAcrossClients) {
  const int kThreads = 4, kAdds = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      auto s = Other();
      for (int i = 0; i < kAdds; ++i) s->add("counter", 1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(store_->add("counter", 0), kThreads * kAdds);
  EXPECT_EQ(store_->add("counter", -5), kThreads * kAdds - 5);
}

TEST_P(StoreContract, GetBlocksUntilSet) {
  auto other = Other();
  std::thread setter([&] {
    std::this_thread::sleep_for(50ms);
    other->setString("late", "here");
  });
  EXPECT_EQ(store_->getString("late"), "here");
  store_->wait({"late"}, 1s);
  setter.join();
}

TEST_P(StoreContract, WaitTimeoutNamesMissingKeys) {
  store_->setString("present", "1");
  try {
    store_->wait({"present", "missing_one", "missing_two"}, 200ms);
    FAIL() << "wait returned";
  } catch (const DeadlineExceeded& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("missing_one"), std::string::npos) << msg;
    EXPECT_NE(msg.find("missing_two"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("present"), std::string::npos) << msg;
  }
  store_->setTimeout(100ms);
  EXPECT_THROW(store_->get("never"), DeadlineExceeded);
}

INSTANTIATE_TEST_SUITE_P(All, StoreContract, ::testing::Values("hash", "file", "prefix", "tcp"));

TEST(PrefixStore, KeysLiveUnderThePrefix) {
  auto base = std::make_shared<HashStore>();
  PrefixStore a("a", base), b("b", base);
  a.setString("k", "from a");
  b.setString("k", "from b");
  EXPECT_EQ(base->getString("a/k"), "from a");
  EXPECT_EQ(b.getString("k"), "from b");
}

TEST(TCPStore, WrongTokenIsRefusedAndTold) {
  auto server = TCPStoreServer::Start("127.0.0.1", 0, "secret");
  TCPStoreOptions good;
  good.token = "secret";
  auto ok = ConnectStore(server->address(), good);
  ok->setString("k", "v");
  for (std::string token : {"wrong", ""}) {
    TCPStoreOptions bad;
    bad.token = token;
    try {
      ConnectStore(server->address(), bad);
      FAIL() << "token '" << token << "' accepted";
    } catch (const Unavailable& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("refused the token"), std::string::npos) << msg;
      EXPECT_NE(msg.find(server->address()), std::string::npos) << msg;
    }
  }
  EXPECT_EQ(ok->getString("k"), "v");
}

TEST(TCPStore, ConnectTimeoutNamesAddress) {
  int port;
  {
    auto server = TCPStoreServer::Start("127.0.0.1", 0);
    port = server->port();
  }
  TCPStoreOptions opts;
  opts.connect_timeout = 300ms;
  try {
    TCPStore store("127.0.0.1", port, opts);
    FAIL() << "connected to a closed port";
  } catch (const Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
  }
}

TEST(TCPStore, ClientConnectsToLateServerWithRetry) {
  int port;
  { port = TCPStoreServer::Start("127.0.0.1", 0)->port(); }
  std::unique_ptr<TCPStoreServer> server;
  std::thread starter([&] {
    std::this_thread::sleep_for(200ms);
    server = TCPStoreServer::Start("127.0.0.1", port);
  });
  TCPStoreOptions opts;
  opts.connect_timeout = 10s;
  TCPStore store("127.0.0.1", port, opts);
  starter.join();
  store.setString("k", "v");
  EXPECT_EQ(store.getString("k"), "v");
}

TEST(TCPStore, ManyWaitersAndLargeValues) {
  auto server = TCPStoreServer::Start("127.0.0.1", 0);
  const int kClients = 16;
  std::vector<std::thread> threads;
  std::atomic<int> done{0};
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      auto s = ConnectStore(server->address());
      s->setString("rank" + std::to_string(i), std::string(1000, 'a' + i % 26));
      std::vector<std::string> all;
      for (int j = 0; j < kClients; ++j) all.push_back("rank" + std::to_string(j));
      s->wait(all, 10s);
      if (s->getString("rank" + std::to_string((i + 1) % kClients)).size() == 1000) ++done;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(done.load(), kClients);
  auto s = ConnectStore(server->address());
  Bytes big(8 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7);
  s->set("big", big);
  EXPECT_EQ(ConnectStore(server->address())->get("big"), big);
}

}  // namespace
}  // namespace flotilla::comm
