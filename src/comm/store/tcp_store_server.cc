// TCPStoreServer: one thread, poll() over the listening socket, a wake pipe
// and every client connection. Requests that must wait (get, wait) are parked
// with a deadline and answered when a set/add supplies their keys or when the
// deadline passes; the poll timeout is the nearest deadline, so nothing spins.
//
// Before a client has proved the secret it costs the server a few hundred
// bytes and a few seconds at most: its frames and its reply backlog are
// capped (wire.h), it is closed at its hello deadline, and past
// max_unauthenticated such clients the oldest is closed for each new one.
// Every such close is counted in /metrics with its reason. After the proof,
// nothing more is read from a client while it has kMaxParkedPerClient
// requests parked or more than kOutHighWater bytes of replies unread, so
// its buffers hold at most about one frame each way.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <list>
#include <map>
#include <thread>

#include "comm/store/socket_util.h"
#include "comm/store/tls_session.h"
#include "comm/store/wire.h"
#include "flotilla/comm/hash_store.h"
#include "flotilla/comm/tcp_store.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/job_secret.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/strings.h"
#include "flotilla/common/tls_files.h"
#include "flotilla/trace/standard_metrics.h"

namespace flotilla::comm {

using Clock = std::chrono::steady_clock;

namespace {

// Replies buffered for an authenticated client before the server stops
// reading its requests until it reads them.
constexpr size_t kOutHighWater = 1u << 20;
// Requests of one client waiting for keys before the server stops reading
// its requests until one is answered (a TCPStore client has one at most).
constexpr int kMaxParkedPerClient = 64;
// Connections accepted per wake-up, so that clients already accepted get
// to answer their challenges between batches.
constexpr int kAcceptBatch = 64;
// A client closed for room younger than this had no fair chance to
// authenticate: the server then accepts more slowly (from kMinBackoff,
// doubling to kMaxBackoff) instead of churning.
constexpr auto kFairChance = std::chrono::milliseconds(250);
constexpr auto kMinBackoff = std::chrono::milliseconds(10);
constexpr auto kMaxBackoff = std::chrono::milliseconds(1000);
// How long a closing connection may take to read its last reply.
constexpr auto kLinger = std::chrono::seconds(1);

}  // namespace

class TCPStoreServerImpl {
 public:
  TCPStoreServerImpl(const std::string& host, int port, TCPStoreServerOptions options);
  ~TCPStoreServerImpl();

  int port() const { return port_; }
  std::string address() const { return host_ + ":" + std::to_string(port_); }
  int clients() const { return clients_; }
  int64_t refused() const { return refused_; }

 private:
  struct Conn {
    net::Fd fd;
    Bytes in;
    Bytes out;
    std::string peer;  // "ip:port" of the client
    std::unique_ptr<tls::Session> tls;  // with TLS, once the client opened a handshake
    bool want_write = false;            // the TLS session waits to write
    std::string nonce;         // the challenge sent, until the hello answers it
    std::string client_nonce;  // the client's, with it
    bool challenged = false;   // a challenge was answered (one per connection)
    bool authed = false;
    bool closing = false;  // close once `out` is flushed
    bool paused = false;   // reading stopped while Busy()
    int parked = 0;        // requests of this client in parked_
    Clock::time_point accepted{};
    // Before authentication: the hello deadline; closing: the linger end.
    Clock::time_point deadline = Clock::time_point::max();
  };
  struct Parked {
    int fd;
    uint8_t cmd;
    std::vector<std::string> keys;
    Clock::time_point deadline;
    std::chrono::milliseconds timeout;
  };

  void Loop();
  int PollTimeoutMs() const;
  void Accept();
  int Unauthenticated() const;
  // Closes the oldest unauthenticated client to make room for a new one;
  // true when it had been connected less than kFairChance.
  bool EvictOldest(Clock::time_point now);
  // Closes clients past their hello deadline or linger.
  void ExpireConnections();
  // Nothing more is read from an authenticated client while this holds.
  static bool Busy(const Conn& c) {
    return c.parked >= kMaxParkedPerClient || c.out.size() >= kOutHighWater;
  }
  void ReadFrom(Conn& c);
  // Handles the whole frames in c.in; false when c was closed.
  bool HandleFrames(Conn& c);
  // The peer closed: counted when it asked for a challenge and never answered.
  void Lost(Conn& c);
  void CloseAfterReply(Conn& c);
  void WriteTo(Conn& c);
  // With TLS: true once c's handshake is done; refuses a plaintext client.
  bool StartTls(Conn& c);
  // recv/send through c's TLS session or directly: > 0 bytes, 0 closed or
  // failed, -1 would block.
  long Receive(Conn& c, void* data, size_t n);
  long Transmit(Conn& c, const void* data, size_t n);
  // Counts (under `reason`), logs and closes (after `reply`, when given) a
  // client refused before it authenticated.
  void RefuseClient(Conn& c, const char* reason, const std::string& why,
                    const wire::Writer* reply);
  void HandleMessage(Conn& c, wire::Reader& r);
  void HandleChallenge(Conn& c, wire::Reader& r);
  void HandleHello(Conn& c, const std::string& proof);
  void HandleAuthed(Conn& c, uint8_t cmd, wire::Reader& r);
  void Park(Conn& c, uint8_t cmd, std::vector<std::string> keys, int64_t timeout_ms);
  void Answer(Conn& c, const Parked& p);
  void WakeParked();
  void ExpireParked();
  void Reply(Conn& c, const wire::Writer& w);
  std::vector<std::string> Missing(const std::vector<std::string>& keys) const;

  std::string host_;
  int port_ = 0;
  TCPStoreServerOptions options_;
  std::shared_ptr<tls::Context> tls_;  // null: plaintext
  // Out of descriptors: the listening socket rests until then (no spin).
  // Also after a batch that closed clients younger than kFairChance.
  Clock::time_point accept_paused_until_{};
  std::chrono::milliseconds backoff_ = kMinBackoff;
  std::map<std::string, int64_t> refusals_by_reason_;  // for logging the 1st, 10th, 100th...
  net::Fd listen_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::atomic<int> clients_{0};  // conns_.size(), for other threads
  std::atomic<int64_t> refused_{0};  // clients refused or closed before authenticating
  // Owned by the server thread only.
  std::map<int, Conn> conns_;
  std::list<Parked> parked_;
  std::map<std::string, Bytes> data_;
  std::thread thread_;
};

TCPStoreServerImpl::TCPStoreServerImpl(const std::string& host, int port,
                                       TCPStoreServerOptions options)
    : host_(host.empty() ? "0.0.0.0" : host), options_(std::move(options)) {
  if (options_.tls.enabled()) tls_ = tls::Context::ForServer(options_.tls);
  listen_ = net::Listen(host, port);
  port_ = net::LocalPort(listen_.get());
  net::SetNonBlocking(listen_.get());
  FLOTILLA_CHECK(::pipe2(wake_, O_CLOEXEC) == 0, Unavailable, "TCPStoreServer: pipe failed");
  thread_ = std::thread([this] { Loop(); });
}

TCPStoreServerImpl::~TCPStoreServerImpl() {
  stop_ = true;
  char b = 1;
  (void)!::write(wake_[1], &b, 1);
  thread_.join();
  ::close(wake_[0]);
  ::close(wake_[1]);
}

int TCPStoreServerImpl::PollTimeoutMs() const {
  auto now = Clock::now();
  int64_t ms = 1000;
  if (accept_paused_until_ > now) {
    ms = std::chrono::duration_cast<std::chrono::milliseconds>(accept_paused_until_ - now).count() + 1;
  }
  for (const auto& p : parked_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(p.deadline - now).count();
    ms = std::min<int64_t>(ms, std::max<int64_t>(left + 1, 0));
  }
  for (const auto& [fd, c] : conns_) {
    if (c.deadline == Clock::time_point::max()) continue;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(c.deadline - now).count();
    ms = std::min<int64_t>(ms, std::max<int64_t>(left + 1, 0));
  }
  return static_cast<int>(ms);
}

void TCPStoreServerImpl::Loop() {
  std::vector<pollfd> fds;
  while (!stop_) {
    fds.clear();
    fds.push_back({wake_[0], POLLIN, 0});
    const bool accepting = Clock::now() >= accept_paused_until_;
    fds.push_back({accepting ? listen_.get() : -1, POLLIN, 0});
    for (auto& [fd, c] : conns_) {
      const bool write = !c.out.empty() || c.want_write;
      // A closing client's bytes are drained and dropped (a TLS one's are not
      // read: its linger ends it).
      const bool read = c.closing ? !tls_ : !c.paused;
      fds.push_back({fd, static_cast<short>((read ? POLLIN : 0) | (write ? POLLOUT : 0)), 0});
    }
    int rc = ::poll(fds.data(), fds.size(), PollTimeoutMs());
    if (rc < 0 && errno != EINTR) {
      log::Error("TCPStoreServer {}: poll failed: {}", address(), strerror(errno));
      return;
    }
    if (rc > 0) {
      if (fds[1].revents & POLLIN) Accept();
      for (size_t i = 2; i < fds.size(); ++i) {
        auto it = conns_.find(fds[i].fd);
        if (it == conns_.end()) continue;
        Conn& c = it->second;
        if (c.paused && !c.closing && (fds[i].revents & (POLLHUP | POLLERR))) {
          Lost(c);  // gone while its request was parked
          continue;
        }
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) ReadFrom(c);
        if (fds[i].revents & POLLOUT) WriteTo(c);
        // A TLS session that waited to write may now read what it holds.
        if ((fds[i].revents & POLLOUT) && c.tls) ReadFrom(c);
      }
    }
    ExpireParked();
    ExpireConnections();
    // Clients that were busy and are not any more: read what they sent.
    for (auto& [fd, c] : conns_) {
      if (c.paused && !Busy(c) && c.fd.get() >= 0) ReadFrom(c);
    }
    for (auto it = conns_.begin(); it != conns_.end();) {
      bool dead = it->second.fd.get() < 0 || (it->second.closing && it->second.out.empty());
      if (dead) {
        parked_.remove_if([&](const Parked& p) { return p.fd == it->first; });
        it = conns_.erase(it);
      } else {
        ++it;
      }
    }
    clients_ = static_cast<int>(conns_.size());
  }
}

void TCPStoreServerImpl::Accept() {
  bool crowded = false;  // a client was closed for room before its fair chance
  for (int i = 0; i < kAcceptBatch; ++i) {
    sockaddr_storage from{};
    socklen_t from_len = sizeof(from);
    int fd = ::accept4(listen_.get(), reinterpret_cast<sockaddr*>(&from), &from_len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)) {
      // The connection stays queued; polling the listener now would spin.
      log::Warn("TCPStoreServer {}: cannot accept a connection ({}); retrying in 100 ms",
                address(), strerror(errno));
      accept_paused_until_ = Clock::now() + std::chrono::milliseconds(100);
      return;
    }
    if (fd < 0) break;
    const auto now = Clock::now();
    if (Unauthenticated() >= options_.max_unauthenticated) crowded |= EvictOldest(now);
    net::SetNoDelay(fd);
    // A client closed for room in this batch may have had this number:
    // nothing of it carries over.
    conns_.erase(fd);
    Conn& c = conns_[fd];
    c.fd = net::Fd(fd);
    c.peer = net::PeerName(from);
    c.accepted = now;
    c.deadline = now + options_.hello_timeout;
  }
  // Clients closed young mean a flood: accept the next batch a little later
  // (longer each time), so the clients accepted can answer their challenges.
  if (crowded) {
    accept_paused_until_ = Clock::now() + backoff_;
    backoff_ = std::min(backoff_ * 2, kMaxBackoff);
  } else {
    backoff_ = kMinBackoff;
  }
}

int TCPStoreServerImpl::Unauthenticated() const {
  int n = 0;
  for (const auto& [fd, c] : conns_) n += !c.authed && c.fd.get() >= 0;
  return n;
}

bool TCPStoreServerImpl::EvictOldest(Clock::time_point now) {
  Conn* oldest = nullptr;
  for (auto& [fd, c] : conns_) {
    if (!c.authed && c.fd.get() >= 0 && (!oldest || c.accepted < oldest->accepted)) oldest = &c;
  }
  if (oldest == nullptr) return false;
  const bool young = now - oldest->accepted < kFairChance;
  RefuseClient(*oldest, "unauthenticated_limit",
               StrCat("closed to make room: more than ", options_.max_unauthenticated,
                      " clients have not authenticated"),
               nullptr);
  return young;
}

void TCPStoreServerImpl::ExpireConnections() {
  const auto now = Clock::now();
  for (auto& [fd, c] : conns_) {
    if (c.fd.get() < 0 || now < c.deadline) continue;
    if (c.closing) {
      c.fd = net::Fd();  // did not read its last reply in time
    } else {
      RefuseClient(c, "hello_timeout",
                   StrCat("did not authenticate within ", options_.hello_timeout.count(), " ms"),
                   nullptr);
    }
  }
}

void TCPStoreServerImpl::Lost(Conn& c) {
  if (!c.authed && c.challenged && !c.closing) {
    RefuseClient(c, "challenge_only", "closed after asking for a challenge", nullptr);
  }
  c.fd = net::Fd();
}

void TCPStoreServerImpl::CloseAfterReply(Conn& c) {
  c.closing = true;
  c.deadline = std::min(c.deadline, Clock::now() + kLinger);
}

// Reads no more than the next frame can need before an authenticated
// client is known (a pre-authentication frame at most), and stops reading a
// Busy() client; a closing client's bytes are dropped.
void TCPStoreServerImpl::ReadFrom(Conn& c) {
  uint8_t buf[65536];
  if (c.fd.get() < 0 || (tls_ && !StartTls(c))) return;
  c.paused = false;
  while (c.fd.get() >= 0) {
    if (!c.closing && !HandleFrames(c)) return;
    if (!c.closing && Busy(c)) {
      c.paused = true;
      return;
    }
    size_t room = sizeof(buf);
    if (!c.authed && !c.closing) room = 4 + wire::kMaxPreAuthMessage - c.in.size();
    const long k = Receive(c, buf, room);
    if (k < 0) return;
    if (k == 0) {
      Lost(c);
      return;
    }
    if (!c.closing) c.in.insert(c.in.end(), buf, buf + k);
  }
}

bool TCPStoreServerImpl::HandleFrames(Conn& c) {
  size_t pos = 0;
  while (c.in.size() - pos >= 4 && !c.closing && c.fd.get() >= 0 && !Busy(c)) {
    uint32_t n;
    std::memcpy(&n, c.in.data() + pos, 4);
    // Checked before the body is buffered: a client that has not proved
    // the secret cannot make the server hold more than a small frame.
    const uint32_t limit = c.authed ? options_.max_message_bytes : wire::kMaxPreAuthMessage;
    if (n > limit && !c.authed) {
      RefuseClient(c, "oversized_frame",
                   StrCat("announced a ", n, "-byte message before authenticating (limit ", limit,
                          ")"),
                   nullptr);
      return false;
    }
    if (n > limit) {
      log::Warn("TCPStoreServer {}: closed a connection announcing a {}-byte message (limit {})",
                address(), n, limit);
      c.fd = net::Fd();
      return false;
    }
    if (c.in.size() - pos - 4 < n) break;
    wire::Reader r(c.in.data() + pos + 4, n);
    pos += 4 + n;
    try {
      HandleMessage(c, r);
    } catch (const std::exception& e) {  // Error, or bad_alloc: the server lives on
      if (c.authed) {
        Reply(c, wire::Writer().u8(wire::kBadRequest).str(e.what()));
        CloseAfterReply(c);
      } else {  // no source locations for a client that has not authenticated
        const auto reply = wire::Writer().u8(wire::kBadRequest).str(
            "malformed request before authenticating");
        RefuseClient(c, "bad_request", StrCat("a malformed request: ", e.what()), &reply);
      }
    }
  }
  if (c.fd.get() < 0) return false;
  c.in.erase(c.in.begin(), c.in.begin() + pos);
  return true;
}

void TCPStoreServerImpl::WriteTo(Conn& c) {
  if (c.tls && !c.tls->established() && !StartTls(c)) return;
  while (!c.out.empty() && c.fd.get() >= 0) {
    const long k = Transmit(c, c.out.data(), c.out.size());
    if (k > 0) {
      c.out.erase(c.out.begin(), c.out.begin() + k);
    } else if (k < 0) {
      return;
    } else {
      c.fd = net::Fd();
    }
  }
}

// A client of a store with TLS must open with a TLS handshake record. One
// that speaks plaintext is told why (in plaintext) and closed, so it fails
// with a clear error instead of a broken connection.
bool TCPStoreServerImpl::StartTls(Conn& c) {
  if (c.closing) return false;  // refused: nothing more is read
  if (!c.tls) {
    unsigned char first = 0;
    const ssize_t k = ::recv(c.fd.get(), &first, 1, MSG_PEEK);
    if (k < 0 && (errno == EAGAIN || errno == EINTR)) return false;
    if (k <= 0) {
      c.fd = net::Fd();
      return false;
    }
    if (!tls::LooksLikeTls(first)) {
      uint8_t drop[4096];  // unread bytes would turn the close into a reset
      while (::recv(c.fd.get(), drop, sizeof(drop), 0) > 0) {
      }
      const auto reply = wire::Writer().u8(wire::kRefused).str(StrCat(
          "the store at ", address(), " serves TLS only: set ", kTlsCaEnv, " (and ",
          kTlsCertEnv, ", ", kTlsKeyEnv, ") as the job's other processes have them"));
      RefuseClient(c, "plaintext_client", "a plaintext client (this store serves TLS only)", &reply);
      return false;
    }
    c.tls = std::make_unique<tls::Session>(tls_, c.fd.get(), /*server=*/true, "");
  }
  const tls::Want want = c.tls->Handshake();
  c.want_write = want == tls::Want::kWrite;
  if (want == tls::Want::kFailed) {
    RefuseClient(c, "tls_handshake", "TLS handshake failed: " + c.tls->error(), nullptr);
    return false;
  }
  return want == tls::Want::kNothing;
}

long TCPStoreServerImpl::Receive(Conn& c, void* data, size_t n) {
  if (c.tls) {
    tls::Want want = tls::Want::kNothing;
    const long k = c.tls->Read(data, n, &want);
    c.want_write = k < 0 && want == tls::Want::kWrite;
    return k;
  }
  const ssize_t k = ::recv(c.fd.get(), data, n, 0);
  if (k < 0 && (errno == EAGAIN || errno == EINTR)) return -1;
  return k > 0 ? k : 0;
}

long TCPStoreServerImpl::Transmit(Conn& c, const void* data, size_t n) {
  if (c.tls) {
    tls::Want want = tls::Want::kNothing;
    const long k = c.tls->Write(data, n, &want);
    c.want_write = k < 0 && want == tls::Want::kWrite;
    return k;
  }
  const ssize_t k = ::send(c.fd.get(), data, n, MSG_NOSIGNAL);
  if (k < 0 && (errno == EAGAIN || errno == EINTR)) return -1;
  return k > 0 ? k : 0;
}

void TCPStoreServerImpl::RefuseClient(Conn& c, const char* reason, const std::string& why,
                                      const wire::Writer* reply) {
  ++refused_;
  trace::RecordAuthRefusal(options_.service, reason);
  // A flood must not flood the log too: the 1st, 10th, 100th... per reason.
  const int64_t n = ++refusals_by_reason_[reason];
  int64_t p = 1;
  while (p < n) p *= 10;
  if (p == n) {
    log::Warn("TCPStoreServer {} ({}): refused the client at {}: {} ({} refusal{} for {})",
              address(), options_.service, c.peer, why, n, n == 1 ? "" : "s", reason);
  }
  if (reply == nullptr) {
    c.fd = net::Fd();
    return;
  }
  CloseAfterReply(c);
  Reply(c, *reply);
}

void TCPStoreServerImpl::Reply(Conn& c, const wire::Writer& w) {
  if (c.fd.get() < 0) return;
  Bytes framed = w.Framed();
  c.out.insert(c.out.end(), framed.begin(), framed.end());
  WriteTo(c);
  if (!c.authed && !c.closing && c.out.size() > wire::kMaxPreAuthBacklog && c.fd.get() >= 0) {
    RefuseClient(c, "unread_replies",
                 StrCat("left more than ", wire::kMaxPreAuthBacklog,
                        " bytes of replies unread before authenticating"),
                 nullptr);
  }
}

void TCPStoreServerImpl::HandleMessage(Conn& c, wire::Reader& r) {
  uint8_t cmd = r.u8();
  if (cmd == wire::kChallenge && !c.authed) {
    HandleChallenge(c, r);
    return;
  }
  if (cmd == wire::kHello && !c.authed) {
    HandleHello(c, r.str());
    return;
  }
  FLOTILLA_CHECK(c.authed, InvalidArgument, "TCPStore request before hello");
  HandleAuthed(c, cmd, r);
}

// One challenge per connection: a client asking for more is not one of
// the job's (they ask once), and answering would cost the server bytes.
void TCPStoreServerImpl::HandleChallenge(Conn& c, wire::Reader& r) {
  if (c.challenged) {
    const auto reply = wire::Writer().u8(wire::kRefused);
    RefuseClient(c, "repeated_challenge", "asked for a second challenge", &reply);
    return;
  }
  std::string client_nonce = r.str();
  FLOTILLA_CHECK(client_nonce.size() == wire::kNonceBytes, InvalidArgument,
                 "a challenge request carries a ", wire::kNonceBytes, "-byte nonce, not ",
                 client_nonce.size());
  c.challenged = true;
  c.client_nonce = std::move(client_nonce);
  c.nonce = RandomBytes(wire::kNonceBytes);
  Reply(c, wire::Writer().u8(wire::kOk).str(c.nonce));
}

// Without a token the store is open: any hello is accepted. With one, the
// proof must answer this connection's challenge (a hello without a
// challenge is refused), compared in constant time, and the Ok carries the
// server's own proof over both nonces.
void TCPStoreServerImpl::HandleHello(Conn& c, const std::string& proof) {
  const bool open = options_.token.empty();
  if (!open && c.nonce.empty()) {
    const auto reply = wire::Writer().u8(wire::kRefused);
    RefuseClient(c, "no_challenge", "a hello without a challenge", &reply);
    return;
  }
  const bool ok = open || SecretEquals(proof, wire::HelloProof(options_.token, c.nonce,
                                                                c.client_nonce));
  if (!ok) {
    const auto reply = wire::Writer().u8(wire::kRefused);
    RefuseClient(c, "bad_secret", proof.empty() ? "no job secret" : "a wrong job secret", &reply);
    return;
  }
  c.authed = true;
  c.deadline = Clock::time_point::max();
  Reply(c, wire::Writer().u8(wire::kOk).str(
               wire::ServerProof(options_.token, c.nonce, c.client_nonce)));
  c.nonce.clear();
  c.client_nonce.clear();
}

void TCPStoreServerImpl::HandleAuthed(Conn& c, uint8_t cmd, wire::Reader& r) {
  switch (cmd) {
    case wire::kSet: {
      std::string key = r.str();
      data_[key] = r.bytes();
      Reply(c, wire::Writer().u8(wire::kOk));
      WakeParked();
      return;
    }
    case wire::kGet: {
      std::string key = r.str();
      Park(c, cmd, {key}, r.i64());
      return;
    }
    case wire::kAdd: {
      std::string key = r.str();
      int64_t delta = r.i64();
      auto it = data_.find(key);
      int64_t v = AddToCounter(it == data_.end() ? 0 : DecodeCounter(it->second, key), delta, key);
      data_[key] = EncodeCounter(v);
      Reply(c, wire::Writer().u8(wire::kOk).i64(v));
      WakeParked();
      return;
    }
    case wire::kCheck:
      Reply(c, wire::Writer().u8(wire::kOk).u8(Missing(r.strs(options_.max_keys)).empty() ? 1 : 0));
      return;
    case wire::kWait: {
      auto keys = r.strs(options_.max_keys);
      Park(c, cmd, std::move(keys), r.i64());
      return;
    }
    case wire::kDelete:
      Reply(c, wire::Writer().u8(wire::kOk).u8(data_.erase(r.str()) > 0 ? 1 : 0));
      return;
    default:
      FLOTILLA_THROW(InvalidArgument, "unknown TCPStore command ", int(cmd));
  }
}

void TCPStoreServerImpl::Park(Conn& c, uint8_t cmd, std::vector<std::string> keys,
                              int64_t timeout_ms) {
  FLOTILLA_CHECK(timeout_ms >= 0 && timeout_ms <= wire::kMaxTimeoutMs, InvalidArgument,
                 "TCPStore request's timeout of ", timeout_ms, " ms is outside [0, ",
                 wire::kMaxTimeoutMs, "] ms");
  auto timeout = std::chrono::milliseconds(timeout_ms);
  Parked p{c.fd.get(), cmd, std::move(keys), Clock::now() + timeout, timeout};
  if (Missing(p.keys).empty()) {
    Answer(c, p);
  } else {
    parked_.push_back(std::move(p));
    ++c.parked;
  }
}

void TCPStoreServerImpl::Answer(Conn& c, const Parked& p) {
  wire::Writer w;
  w.u8(wire::kOk);
  if (p.cmd == wire::kGet) {
    const Bytes& v = data_.at(p.keys[0]);
    w.bytes(v.data(), v.size());
  }
  Reply(c, w);
}

void TCPStoreServerImpl::WakeParked() {
  for (auto it = parked_.begin(); it != parked_.end();) {
    auto c = conns_.find(it->fd);
    if (c != conns_.end() && Missing(it->keys).empty()) {
      Answer(c->second, *it);
      --c->second.parked;
      it = parked_.erase(it);
    } else {
      ++it;
    }
  }
}

void TCPStoreServerImpl::ExpireParked() {
  auto now = Clock::now();
  for (auto it = parked_.begin(); it != parked_.end();) {
    auto c = conns_.find(it->fd);
    if (c != conns_.end() && now >= it->deadline) {
      Reply(c->second, wire::Writer().u8(wire::kTimeout).strs(Missing(it->keys)));
      --c->second.parked;
      it = parked_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<std::string> TCPStoreServerImpl::Missing(const std::vector<std::string>& keys) const {
  std::vector<std::string> missing;
  for (const auto& k : keys) {
    if (!data_.count(k)) missing.push_back(k);
  }
  return missing;
}

// ---- public face ----

std::unique_ptr<TCPStoreServer> TCPStoreServer::Start(const std::string& host, int port,
                                                       const std::string& token) {
  TCPStoreServerOptions options;
  options.token = token;
  return Start(host, port, std::move(options));
}

std::unique_ptr<TCPStoreServer> TCPStoreServer::Start(const std::string& host, int port,
                                                       TCPStoreServerOptions options) {
  auto impl = std::make_unique<TCPStoreServerImpl>(host, port, std::move(options));
  return std::unique_ptr<TCPStoreServer>(new TCPStoreServer(std::move(impl)));
}

TCPStoreServer::TCPStoreServer(std::unique_ptr<TCPStoreServerImpl> impl)
    : impl_(std::move(impl)) {}
TCPStoreServer::~TCPStoreServer() = default;
int TCPStoreServer::port() const { return impl_->port(); }
std::string TCPStoreServer::address() const { return impl_->address(); }
int TCPStoreServer::clients() const { return impl_->clients(); }
int64_t TCPStoreServer::refused() const { return impl_->refused(); }

}  // namespace flotilla::comm
