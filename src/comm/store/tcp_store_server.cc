// TCPStoreServer: one thread, poll() over the listening socket, a wake pipe
// and every client connection. Requests that must wait (get, wait) are parked
// with a deadline and answered when a set/add supplies their keys or when the
// deadline passes; the poll timeout is the nearest deadline, so nothing spins.
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
    std::string nonce;  // the challenge sent, until the hello answers it
    bool authed = false;
    bool closing = false;  // close once `out` is flushed
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
  void ReadFrom(Conn& c);
  void WriteTo(Conn& c);
  // With TLS: true once c's handshake is done; refuses a plaintext client.
  bool StartTls(Conn& c);
  // recv/send through c's TLS session or directly: > 0 bytes, 0 closed or
  // failed, -1 would block.
  long Receive(Conn& c, void* data, size_t n);
  long Transmit(Conn& c, const void* data, size_t n);
  // Counts, logs and closes (after `reply`, when given) a refused client.
  void RefuseClient(Conn& c, const std::string& why, const wire::Writer* reply);
  void HandleMessage(Conn& c, wire::Reader& r);
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
  Clock::time_point accept_paused_until_{};
  net::Fd listen_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::atomic<int> clients_{0};  // conns_.size(), for other threads
  std::atomic<int64_t> refused_{0};  // hellos refused for a wrong or missing secret
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
      fds.push_back({fd, static_cast<short>(POLLIN | (write ? POLLOUT : 0)), 0});
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
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) ReadFrom(it->second);
        if (fds[i].revents & POLLOUT) WriteTo(it->second);
        // A TLS session that waited to write may now read what it holds.
        if ((fds[i].revents & POLLOUT) && it->second.tls) ReadFrom(it->second);
      }
    }
    ExpireParked();
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
  while (true) {
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
    if (fd < 0) return;
    net::SetNoDelay(fd);
    conns_[fd].fd = net::Fd(fd);
    conns_[fd].peer = net::PeerName(from);
  }
}

void TCPStoreServerImpl::ReadFrom(Conn& c) {
  uint8_t buf[65536];
  if (c.fd.get() < 0 || (tls_ && !StartTls(c))) return;
  while (true) {
    const long k = Receive(c, buf, sizeof(buf));
    if (k > 0) {
      c.in.insert(c.in.end(), buf, buf + k);
      if (!c.authed && c.in.size() > 4 + wire::kMaxPreAuthMessage) {
        log::Warn("TCPStoreServer {}: closed a connection sending more than {} bytes before "
                  "authenticating", address(), wire::kMaxPreAuthMessage);
        c.fd = net::Fd();
        return;
      }
      continue;
    }
    if (k < 0) break;
    c.fd = net::Fd();  // closed or failed
    return;
  }
  size_t pos = 0;
  while (c.in.size() - pos >= 4 && !c.closing) {
    uint32_t n;
    std::memcpy(&n, c.in.data() + pos, 4);
    // Checked before the body is buffered: a client that has not proved
    // the secret cannot make the server hold more than 64 KiB for it.
    const uint32_t limit = c.authed ? options_.max_message_bytes : wire::kMaxPreAuthMessage;
    if (n > limit) {
      log::Warn("TCPStoreServer {}: closed a connection announcing a {}-byte message (limit {})",
                address(), n, limit);
      c.fd = net::Fd();
      return;
    }
    if (c.in.size() - pos - 4 < n) break;
    wire::Reader r(c.in.data() + pos + 4, n);
    pos += 4 + n;
    try {
      HandleMessage(c, r);
    } catch (const std::exception& e) {  // Error, or bad_alloc: the server lives on
      Reply(c, wire::Writer().u8(wire::kBadRequest).str(e.what()));
      c.closing = true;
    }
  }
  c.in.erase(c.in.begin(), c.in.begin() + pos);
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
      RefuseClient(c, "a plaintext client (this store serves TLS only)", &reply);
      return false;
    }
    c.tls = std::make_unique<tls::Session>(tls_, c.fd.get(), /*server=*/true, "");
  }
  const tls::Want want = c.tls->Handshake();
  c.want_write = want == tls::Want::kWrite;
  if (want == tls::Want::kFailed) {
    RefuseClient(c, "TLS handshake failed: " + c.tls->error(), nullptr);
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

void TCPStoreServerImpl::RefuseClient(Conn& c, const std::string& why,
                                      const wire::Writer* reply) {
  ++refused_;
  trace::RecordAuthRefusal(options_.service);
  log::Warn("TCPStoreServer {} ({}): refused the client at {}: {}", address(), options_.service,
            c.peer, why);
  if (reply == nullptr) {
    c.fd = net::Fd();
    return;
  }
  Reply(c, *reply);
  c.closing = true;
}

void TCPStoreServerImpl::Reply(Conn& c, const wire::Writer& w) {
  Bytes framed = w.Framed();
  c.out.insert(c.out.end(), framed.begin(), framed.end());
  WriteTo(c);
}

void TCPStoreServerImpl::HandleMessage(Conn& c, wire::Reader& r) {
  uint8_t cmd = r.u8();
  if (cmd == wire::kChallenge && !c.authed) {
    c.nonce = RandomBytes(wire::kNonceBytes);
    Reply(c, wire::Writer().u8(wire::kOk).str(c.nonce));
    return;
  }
  if (cmd == wire::kHello && !c.authed) {
    HandleHello(c, r.str());
    return;
  }
  FLOTILLA_CHECK(c.authed, InvalidArgument, "TCPStore request before hello");
  HandleAuthed(c, cmd, r);
}

// Without a token the store is open: any hello is accepted. With one, the
// proof must answer this connection's challenge (a hello without a
// challenge is refused), compared in constant time.
void TCPStoreServerImpl::HandleHello(Conn& c, const std::string& proof) {
  const bool open = options_.token.empty();
  const bool ok = open || (!c.nonce.empty() &&
                           SecretEquals(proof, wire::HelloProof(options_.token, c.nonce)));
  c.nonce.clear();
  if (!ok) {
    const auto reply = wire::Writer().u8(wire::kRefused);
    RefuseClient(c, proof.empty() ? "no job secret" : "a wrong job secret", &reply);
    return;
  }
  c.authed = true;
  Reply(c, wire::Writer().u8(wire::kOk));
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
