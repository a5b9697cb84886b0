#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <thread>

#include "comm/store/socket_util.h"
#include "comm/store/wire.h"
#include "flotilla/comm/file_store.h"
#include "flotilla/comm/hash_store.h"
#include "flotilla/comm/prefix_store.h"
#include "flotilla/comm/tcp_store.h"
#include "flotilla/common/error.h"
#include "flotilla/common/file_util.h"
#include "flotilla/common/logging.h"
#include "flotilla/trace/standard_metrics.h"

// Counts accept() calls that failed for lack of descriptors: this binary's
// accept4 goes through here.
namespace {
std::atomic<int> g_failed_accepts{0};
}  // namespace

extern "C" int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
  int rc = static_cast<int>(::syscall(SYS_accept4, fd, addr, len, flags));
  if (rc < 0 && errno == EMFILE) ++g_failed_accepts;
  return rc;
}

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

// setTimeout is part of the thread-safe contract: a get() waiting on one
// thread keeps its timeout while another thread changes the store's (a data
// race here is what ThreadSanitizer reports under `make test SANITIZE=thread`).
TEST_P(StoreContract, SetTimeoutWhileAnotherThreadWaits) {
  store_->setTimeout(150ms);
  std::thread waiter([&] { EXPECT_THROW(store_->get("never_set"), DeadlineExceeded); });
  for (int i = 0; i < 50; ++i) store_->setTimeout(std::chrono::milliseconds(100 + i));
  waiter.join();
  EXPECT_EQ(store_->timeout(), 149ms);
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

// A refused client is told, named in the server's log, and counted in
// /metrics under the server's service ("store" or "elastic").
TEST(TCPStore, WrongTokenIsRefusedToldLoggedAndCounted) {
  for (const std::string service : {"store", "elastic"}) {
    TCPStoreServerOptions options;
    options.token = "secret";
    options.service = service;
    auto server = TCPStoreServer::Start("127.0.0.1", 0, options);
    TCPStoreOptions good;
    good.token = "secret";
    auto ok = ConnectStore(server->address(), good);
    ok->setString("k", "v");
    const double before = trace::AuthRefusals(service);
    log::Capture capture;
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
    EXPECT_EQ(server->refused(), 2);
    EXPECT_EQ(trace::AuthRefusals(service), before + 2) << service;
    const std::string logged = capture.text();
    EXPECT_NE(logged.find("(" + service + "): refused the client at 127.0.0.1:"),
              std::string::npos) << logged;
  }
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

// A raw connection to a store server, for sending what no client would.
class RawConn {
 public:
  explicit RawConn(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawConn() { ::close(fd_); }
  bool connected() const { return connected_; }
  bool Send(const std::string& bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  // True when the server closed the connection within `timeout` (reading
  // and dropping whatever it sent first).
  bool ClosedWithin(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    char buf[4096];
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return true;
    }
    return false;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

std::string Frame(uint32_t length, const std::string& body) {
  std::string out(4, '\0');
  std::memcpy(out.data(), &length, 4);
  return out + body;
}

TEST(TCPStoreBounds, AnOversizedFrameBeforeHelloIsClosedAtOnce) {
  auto server = TCPStoreServer::Start("127.0.0.1", 0, "secret");
  RawConn conn(server->port());
  ASSERT_TRUE(conn.connected());
  // Announces 1 MiB and sends a little: the server must not wait for (and
  // buffer) the rest from a client that has not authenticated.
  ASSERT_TRUE(conn.Send(Frame(1u << 20, std::string(100, 'x'))));
  EXPECT_TRUE(conn.ClosedWithin(2s));
  RawConn flood(server->port());
  ASSERT_TRUE(flood.connected());
  std::string chunk(64 << 10, 'y');
  bool closed = false;
  for (int i = 0; i < 64 && !closed; ++i) closed = !flood.Send(chunk) || flood.ClosedWithin(10ms);
  EXPECT_TRUE(closed || flood.ClosedWithin(2s)) << "4 MiB accepted before a hello";
  // The server is still serving.
  TCPStoreOptions good;
  good.token = "secret";
  ConnectStore(server->address(), good)->setString("k", "v");
}

// Reads one reply frame's body from `fd` (blocking); "" when the peer closed.
std::string ReadReply(int fd) {
  uint32_t n = 0;
  if (net::RecvAll(fd, &n, 4, std::chrono::steady_clock::now() + 5s) != 1) return "";
  std::string body(n, '\0');
  if (net::RecvAll(fd, body.data(), n, std::chrono::steady_clock::now() + 5s) != 1) return "";
  return body;
}

// Plays a store at a listener of its own: answers one client's challenge
// with `nonce` and its hello with Ok and the proof `prove` computes from
// both nonces. Returns what the client sent (the challenge request, then
// the hello).
class FakeStore {
 public:
  using Prover = std::function<std::string(const std::string& nonce, const std::string& client)>;
  explicit FakeStore(Prover prove) : listener_(net::Listen("127.0.0.1", 0)) {
    port_ = net::LocalPort(listener_.get());
    thread_ = std::thread([this, prove = std::move(prove)] { Serve(prove); });
  }
  ~FakeStore() { Join(); }
  int port() const { return port_; }
  const std::string& Join() {
    if (thread_.joinable()) thread_.join();
    return seen_;
  }
  static constexpr char kNonce[] = "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn";

 private:
  void Serve(const Prover& prove) {
    net::Fd conn(::accept(listener_.get(), nullptr, nullptr));
    seen_ = ReadReply(conn.get());  // the challenge request
    if (seen_.size() < 5) return;
    wire::Reader r(reinterpret_cast<const uint8_t*>(seen_.data()) + 1, seen_.size() - 1);
    const std::string client_nonce = r.str();
    const Bytes challenge = wire::Writer().u8(wire::kOk).str(kNonce).Framed();
    net::SendAll(conn.get(), challenge.data(), challenge.size());
    seen_ += ReadReply(conn.get());  // the hello
    const Bytes ok = wire::Writer().u8(wire::kOk).str(prove(kNonce, client_nonce)).Framed();
    net::SendAll(conn.get(), ok.data(), ok.size());
    char c;
    (void)!::recv(conn.get(), &c, 1, 0);  // until the client closes
  }
  net::Fd listener_;
  int port_ = 0;
  std::string seen_;
  std::thread thread_;
};

// The secret never crosses the network: a listener posing as the store sees
// a challenge request and a proof that answers both nonces, never the token.
TEST(TCPStoreAuth, TheTokenNeverCrossesTheWire) {
  const std::string token = "the-job-secret-0123456789abcdef";
  FakeStore fake([&](const std::string& nonce, const std::string& client) {
    return wire::ServerProof(token, nonce, client);
  });
  TCPStoreOptions o;
  o.token = token;
  auto store = std::make_unique<TCPStore>("127.0.0.1", fake.port(), o);
  store.reset();
  const std::string seen = fake.Join();
  EXPECT_EQ(seen.find(token), std::string::npos);
  ASSERT_GT(seen.size(), 5u + wire::kNonceBytes);
  const std::string client_nonce = seen.substr(5, wire::kNonceBytes);
  EXPECT_NE(seen.find(wire::HelloProof(token, FakeStore::kNonce, client_nonce)),
            std::string::npos);
  EXPECT_EQ(static_cast<uint8_t>(seen[0]), wire::kChallenge);
}

// Mutual authentication: a store that cannot prove the secret (an impostor
// echoing Ok, one proving another secret, or replaying the client's own
// proof) is refused by a client holding the token, with a clear error.
TEST(TCPStoreAuth, AClientRefusesAStoreThatCannotProveTheSecret) {
  const std::string token = "the-job-secret-0123456789abcdef";
  const std::vector<std::pair<std::string, FakeStore::Prover>> impostors = {
      {"bare ok", [](const std::string&, const std::string&) { return std::string(); }},
      {"another secret",
       [](const std::string& n, const std::string& c) { return wire::ServerProof("guess", n, c); }},
      {"the client's own proof",
       [&](const std::string& n, const std::string& c) { return wire::HelloProof(token, n, c); }},
  };
  for (const auto& [name, prove] : impostors) {
    FakeStore fake(prove);
    TCPStoreOptions o;
    o.token = token;
    o.connect_timeout = 2s;
    try {
      TCPStore store("127.0.0.1", fake.port(), o);
      ADD_FAILURE() << "accepted an impostor store answering with " << name;
    } catch (const Unavailable& e) {
      EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(fake.port()) +
                                           " did not prove the job secret"),
                std::string::npos)
          << name << ": " << e.what();
    }
  }
  // The real store proves it.
  auto server = TCPStoreServer::Start("127.0.0.1", 0, token);
  TCPStoreOptions o;
  o.token = token;
  ConnectStore(server->address(), o)->setString("k", "v");
}

// Speaks the wire protocol by hand on a raw connection.
struct WireClient {
  explicit WireClient(int port) {
    std::string error;
    fd = net::TryConnect("127.0.0.1", port, &error);
    EXPECT_TRUE(fd) << error;
  }
  bool Send(const wire::Writer& w) const {
    const Bytes b = w.Framed();
    return net::SendAll(fd.get(), b.data(), b.size());
  }
  // The server's nonce, after asking with a client nonce.
  std::string Challenge(const std::string& client_nonce) const {
    EXPECT_TRUE(Send(wire::Writer().u8(wire::kChallenge).str(client_nonce)));
    const std::string reply = ReadReply(fd.get());
    if (reply.size() < 5) return "";
    wire::Reader r(reinterpret_cast<const uint8_t*>(reply.data()) + 1, reply.size() - 1);
    return r.str();
  }
  uint8_t Hello(const std::string& proof) const {
    EXPECT_TRUE(Send(wire::Writer().u8(wire::kHello).str(proof)));
    const std::string reply = ReadReply(fd.get());
    return reply.empty() ? 0xff : static_cast<uint8_t>(reply[0]);
  }
  net::Fd fd;
};

// A proof is worth one connection: replayed on another (other nonces), or
// sent without asking for a challenge, it is refused.
TEST(TCPStoreAuth, AProofIsNotReplayable) {
  const std::string token = "the-job-secret-0123456789abcdef";
  auto server = TCPStoreServer::Start("127.0.0.1", 0, token);
  const std::string client_nonce(wire::kNonceBytes, 'c');
  WireClient first(server->port());
  const std::string nonce = first.Challenge(client_nonce);
  ASSERT_EQ(nonce.size(), wire::kNonceBytes);
  const std::string proof = wire::HelloProof(token, nonce, client_nonce);
  EXPECT_EQ(first.Hello(proof), wire::kOk);
  WireClient second(server->port());
  EXPECT_NE(second.Challenge(client_nonce), nonce) << "every connection gets a fresh nonce";
  EXPECT_EQ(second.Hello(proof), wire::kRefused);
  WireClient third(server->port());
  EXPECT_EQ(third.Hello(proof), wire::kRefused) << "a hello without a challenge";
  EXPECT_EQ(server->refused(), 2);
}

// Before authentication a client gets one challenge: one that asks again
// without reading (the hello flood of issue 32) is refused at the second,
// its replies never pile up, and the refusal is counted.
TEST(TCPStoreFlood, AChallengeFloodWithoutReadingIsRefusedAtTheSecond) {
  TCPStoreServerOptions options;
  options.token = "secret";
  auto server = TCPStoreServer::Start("127.0.0.1", 0, options);
  const double before = trace::AuthRefusals("store", "repeated_challenge");
  const double bare = trace::AuthRefusals("store", "bad_request");
  RawConn flood(server->port());
  const std::string ask = Frame(37, std::string(1, char(wire::kChallenge)) +
                                        std::string("\x20\0\0\0", 4) + std::string(32, 'c'));
  std::string asks;
  for (int i = 0; i < 1000; ++i) asks += ask;
  flood.Send(asks);
  EXPECT_TRUE(flood.ClosedWithin(2s));
  EXPECT_EQ(trace::AuthRefusals("store", "repeated_challenge"), before + 1);
  // The probe of issue 32: 5-byte challenge requests without a client nonce.
  RawConn old(server->port());
  old.Send(Frame(1, std::string(1, char(wire::kChallenge))));
  EXPECT_TRUE(old.ClosedWithin(2s));
  EXPECT_EQ(trace::AuthRefusals("store", "bad_request"), bare + 1);
}

// Unauthenticated connections that stay idle, or send a byte at a time, or
// hold a partial frame, are closed at the hello deadline and counted; a
// client that authenticates is served meanwhile.
TEST(TCPStoreFlood, SilentAndSlowClientsAreClosedAtTheHelloDeadline) {
  TCPStoreServerOptions options;
  options.token = "secret";
  options.hello_timeout = 500ms;
  auto server = TCPStoreServer::Start("127.0.0.1", 0, options);
  const double before = trace::AuthRefusals("store", "hello_timeout");
  std::vector<std::unique_ptr<RawConn>> idle;
  for (int i = 0; i < 50; ++i) idle.push_back(std::make_unique<RawConn>(server->port()));
  RawConn partial(server->port());
  partial.Send(Frame(200, std::string(100, 'x')));  // under the limit, never finished
  RawConn trickle(server->port());
  const auto start = std::chrono::steady_clock::now();
  TCPStoreOptions good;
  good.token = "secret";
  auto store = ConnectStore(server->address(), good);
  bool trickle_closed = false;
  const Bytes framed = wire::Writer().u8(wire::kChallenge).str(std::string(32, 'c')).Framed();
  const std::string ask(framed.begin(), framed.end());  // 41 bytes: 2 s at this pace
  for (size_t i = 0; i < 40 && !trickle_closed; ++i) {
    trickle.Send(ask.substr(i % ask.size(), 1));
    trickle_closed = trickle.ClosedWithin(50ms);
    store->setString("k" + std::to_string(i), "v");
  }
  EXPECT_TRUE(trickle_closed) << "a byte-at-a-time client outlived the hello deadline";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
  EXPECT_TRUE(partial.ClosedWithin(1s));
  for (auto& c : idle) EXPECT_TRUE(c->ClosedWithin(1s));
  EXPECT_EQ(trace::AuthRefusals("store", "hello_timeout"), before + 52);
  EXPECT_EQ(store->getString("k0"), "v");
  EXPECT_EQ(server->clients(), 1);
}

// Past max_unauthenticated, the oldest unauthenticated client is closed for
// each new one: a flood of idle connections cannot lock the job's ranks out.
TEST(TCPStoreFlood, PastTheCapTheOldestUnauthenticatedClientMakesRoom) {
  TCPStoreServerOptions options;
  options.token = "secret";
  options.max_unauthenticated = 8;
  auto server = TCPStoreServer::Start("127.0.0.1", 0, options);
  const double before = trace::AuthRefusals("store", "unauthenticated_limit");
  std::vector<std::unique_ptr<RawConn>> idle;
  for (int i = 0; i < 40; ++i) idle.push_back(std::make_unique<RawConn>(server->port()));
  TCPStoreOptions good;
  good.token = "secret";
  good.connect_timeout = 10s;
  auto store = ConnectStore(server->address(), good);
  store->setString("k", "v");
  EXPECT_EQ(store->getString("k"), "v");
  EXPECT_TRUE(idle.front()->ClosedWithin(1s));
  EXPECT_GE(trace::AuthRefusals("store", "unauthenticated_limit"), before + 32);
  EXPECT_LE(server->clients(), 1 + 8);
}

// An error reply to a client that has not authenticated names no source file.
TEST(TCPStoreFlood, ErrorRepliesBeforeAuthenticationCarryNoSourcePaths) {
  auto server = TCPStoreServer::Start("127.0.0.1", 0, "secret");
  WireClient c(server->port());
  ASSERT_TRUE(c.Send(wire::Writer().u8(wire::kSet).str("k").str("v")));
  const std::string reply = ReadReply(c.fd.get());
  ASSERT_FALSE(reply.empty());
  EXPECT_EQ(static_cast<uint8_t>(reply[0]), wire::kBadRequest);
  EXPECT_EQ(reply.find(".cc"), std::string::npos) << reply;
  EXPECT_NE(reply.find("before authenticating"), std::string::npos) << reply;
}

// Resident memory of this process (the server runs in it), in bytes.
int64_t ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

// An authenticated client that pipelines requests without reading the
// replies is held back: the server stops reading it past 1 MiB
// of unread replies instead of buffering every answer, and resumes when the
// client reads.
TEST(TCPStoreFlood, AnAuthenticatedClientsUnreadRepliesAreBounded) {
  auto server = TCPStoreServer::Start("127.0.0.1", 0, "secret");
  TCPStoreOptions good;
  good.token = "secret";
  ConnectStore(server->address(), good)->set("big", Bytes(1 << 20, 7));
  WireClient c(server->port());
  const std::string client_nonce(wire::kNonceBytes, 'c');
  const std::string nonce = c.Challenge(client_nonce);
  ASSERT_EQ(c.Hello(wire::HelloProof("secret", nonce, client_nonce)), wire::kOk);
  const int64_t before = ResidentBytes();
  constexpr int kGets = 200;  // 200 MiB of replies
  const Bytes get = wire::Writer().u8(wire::kGet).str(std::string("big")).i64(1000).Framed();
  std::string gets;
  for (int i = 0; i < kGets; ++i) gets.append(get.begin(), get.end());
  ASSERT_TRUE(net::SendAll(c.fd.get(), gets.data(), gets.size()));
  std::this_thread::sleep_for(300ms);
  EXPECT_LT(ResidentBytes() - before, int64_t{32} << 20) << "the server buffered the replies";
  for (int i = 0; i < kGets; ++i) {
    const std::string reply = ReadReply(c.fd.get());
    ASSERT_EQ(reply.size(), 1u + 4 + (1 << 20)) << "reply " << i;
  }
}

TEST(TCPStoreBounds, KeyCountsAreCheckedAgainstTheLimitAndTheBytesLeft) {
  auto server = TCPStoreServer::Start("127.0.0.1", 0);
  auto store = ConnectStore(server->address());
  std::vector<std::string> keys(70000, "");
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = std::to_string(i);
  try {
    store->check(keys);
    FAIL() << "a check of 70000 keys was served";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("65536"), std::string::npos) << e.what();
  }
  // A count no message could hold: answered with an error, not a huge vector.
  RawConn conn(server->port());
  std::string hello = std::string(1, char(1)) + std::string(4, '\0');
  std::string check = std::string(1, char(5)) + std::string("\xff\xff\x00\x00", 4);
  ASSERT_TRUE(conn.Send(Frame(5, hello) + Frame(5, check)));
  EXPECT_TRUE(conn.ClosedWithin(2s));
  store = ConnectStore(server->address());
  store->setString("still", "serving");
  EXPECT_EQ(store->getString("still"), "serving");
}

TEST(TCPStoreBounds, OutOfDescriptorsTheAcceptLoopBacksOff) {
  int ready[2], go[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  pid_t pid = ::fork();
  if (pid == 0) {  // the server, in a process whose descriptor table is full
    auto server = TCPStoreServer::Start("127.0.0.1", 0);
    rlimit lim{64, 64};
    ::setrlimit(RLIMIT_NOFILE, &lim);
    while (::open("/dev/null", O_RDONLY | O_CLOEXEC) >= 0) {
    }
    const int port = server->port();
    (void)!::write(ready[1], &port, sizeof(port));
    char c;
    (void)!::read(go[0], &c, 1);  // the parent's connection is queued now
    const int before = g_failed_accepts.load();
    std::this_thread::sleep_for(1s);
    // Spinning makes thousands of attempts a second even on a busy machine;
    // backing off makes about ten.
    _exit(g_failed_accepts.load() - before < 100 ? 0 : 1);
  }
  int port = 0;
  ASSERT_EQ(::read(ready[0], &port, sizeof(port)), static_cast<ssize_t>(sizeof(port)));
  RawConn conn(port);  // sits in the backlog: the server cannot accept it
  ASSERT_TRUE(conn.connected());
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the server spun on accept() while out of descriptors";
  for (int fd : {ready[0], ready[1], go[0], go[1]}) ::close(fd);
}

}  // namespace
}  // namespace flotilla::comm
