#include "flotilla/comm/tcp_store.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <thread>

#include "comm/store/socket_util.h"
#include "comm/store/tls_session.h"
#include "comm/store/wire.h"
#include "flotilla/comm/hash_store.h"
#include "flotilla/common/enforce.h"
#include "flotilla/common/job_secret.h"
#include "flotilla/common/strings.h"

namespace flotilla::comm {

using Clock = std::chrono::steady_clock;

// The server answers parked requests at their deadline; the client waits a
// little longer so that the server's named-keys answer wins the race.
constexpr auto kReplySlack = std::chrono::seconds(10);

struct TCPStore::Reply {
  uint8_t status = 0;
  Bytes body;  // after the status byte
  wire::Reader reader() const { return wire::Reader(body.data(), body.size()); }
};

TCPStore::TCPStore(const std::string& host, int port, TCPStoreOptions options)
    : host_(host), port_(port), options_(std::move(options)) {
  setTimeout(options_.timeout);
  if (options_.tls.enabled()) tls_context_ = tls::Context::ForClient(options_.tls);
  std::lock_guard<std::mutex> lock(mu_);
  Connect(options_.connect_timeout);
}

TCPStore::~TCPStore() { CloseLocked(); }

std::string TCPStore::address() const { return host_ + ":" + std::to_string(port_); }

void TCPStore::CloseLocked() {
  tls_.reset();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool TCPStore::SendLocked(const void* data, size_t n) {
  return tls_ ? tls_->SendAll(data, n) : net::SendAll(fd_, data, n);
}

int TCPStore::RecvLocked(void* data, size_t n, Clock::time_point deadline) {
  return tls_ ? tls_->RecvAll(data, n, deadline) : net::RecvAll(fd_, data, n, deadline);
}

void TCPStore::HandshakeLocked(std::chrono::milliseconds budget) {
  // The socket blocks: bound the handshake by the connect budget.
  const auto limit = std::chrono::duration_cast<std::chrono::microseconds>(budget + kReplySlack);
  timeval tv{static_cast<time_t>(limit.count() / 1000000),
             static_cast<suseconds_t>(limit.count() % 1000000)};
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  tls_ = std::make_unique<tls::Session>(tls_context_, fd_, /*server=*/false, host_);
  const tls::Want want = tls_->Handshake();
  const std::string error = tls_->error();
  timeval none{0, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
  if (want == tls::Want::kNothing) return;
  CloseLocked();
  FLOTILLA_THROW(Unavailable, "TLS handshake with the store at ", address(), " failed: ", error,
                 " (a store without TLS, one whose certificate ", kTlsCaEnv,
                 " did not sign or that does not name ", host_,
                 ", or one that refuses this client's certificate)");
}

void TCPStore::Connect(std::chrono::milliseconds budget) {
  const auto deadline = Clock::now() + budget;
  auto pause = std::chrono::milliseconds(20);
  std::string error;
  while (true) {
    net::Fd fd = net::TryConnect(host_, port_, &error);
    if (fd) {
      fd_ = fd.release();
      if (tls_context_) HandshakeLocked(budget);
      if (AuthenticateLocked(Clock::now() + budget + kReplySlack)) return;
      error = "the store closed the connection before authenticating it";
    }
    FLOTILLA_CHECK(Clock::now() < deadline, Unavailable, "cannot reach store at ", address(),
                   " within ", budget.count(), "ms: ", error);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
  }
}

// Challenge-response both ways (wire.h): the secret itself never crosses
// the network, and the store proves it holds the secret too.
bool TCPStore::AuthenticateLocked(Clock::time_point deadline) {
  const std::string client_nonce = RandomBytes(wire::kNonceBytes);
  const Bytes challenge = wire::Writer().u8(wire::kChallenge).str(client_nonce).Framed();
  Bytes reply;
  int rc = SendLocked(challenge.data(), challenge.size())
               ? RecvReply(deadline, &reply, wire::kMaxPreAuthMessage)
               : 0;
  std::string nonce;
  std::string server_proof;
  if (rc == 1 && reply[0] == wire::kOk) {
    try {
      nonce = wire::Reader(reply.data() + 1, reply.size() - 1).str();
    } catch (const Corruption&) {
    }
    const Bytes hello = wire::Writer()
                            .u8(wire::kHello)
                            .str(wire::HelloProof(options_.token, nonce, client_nonce))
                            .Framed();
    rc = SendLocked(hello.data(), hello.size())
             ? RecvReply(deadline, &reply, wire::kMaxPreAuthMessage)
             : 0;
    if (rc == 1 && reply[0] == wire::kOk) {
      try {
        server_proof = wire::Reader(reply.data() + 1, reply.size() - 1).str();
      } catch (const Corruption&) {  // a bare Ok proves nothing
      }
      // Without a token there is nothing to prove either way.
      if (options_.token.empty() ||
          SecretEquals(server_proof, wire::ServerProof(options_.token, nonce, client_nonce))) {
        return true;
      }
      CloseLocked();
      FLOTILLA_THROW(Unavailable, "store at ", address(),
                     " did not prove the job secret: refusing it (an impostor listening at "
                     "that address, or a store started without the job's secret; "
                     "FLOTILLA_JOB_SECRET_FILE / FLOTILLA_JOB_SECRET)");
    }
  }
  const std::string tls_error = tls_ ? tls_->error() : "";
  CloseLocked();
  if (rc == 1 && reply[0] == wire::kRefused) {
    // A refusal that says why (a store with TLS refusing a plaintext client).
    if (reply.size() > 5) {
      wire::Reader r(reply.data() + 1, reply.size() - 1);
      FLOTILLA_THROW(Unavailable, "store at ", address(), " refused the connection: ", r.str());
    }
    FLOTILLA_THROW(Unavailable, "store at ", address(), " refused the token (",
                   options_.token.empty() ? "none was sent" : "not the job secret it expects",
                   "; FLOTILLA_JOB_SECRET_FILE / FLOTILLA_JOB_SECRET)");
  }
  // With TLS 1.3 a store refuses a client's certificate after the client
  // finished its side of the handshake: the first read fails.
  if (!tls_error.empty()) {
    FLOTILLA_THROW(Unavailable, "store at ", address(), " refused the connection: TLS: ",
                   tls_error, " (its CA did not sign this client's certificate ",
                   kTlsCertEnv, ", or there is none)");
  }
  FLOTILLA_CHECK(rc != 1, Unavailable, "store at ", address(),
                 " answered the challenge with an unexpected status ", int(reply[0]));
  return false;  // closed (a crowded store) or silent: retried
}

int TCPStore::RecvReply(Clock::time_point deadline, Bytes* body, uint32_t max_bytes) {
  uint32_t n = 0;
  const int rc = RecvLocked(&n, 4, deadline);
  if (rc != 1) return rc;
  if (n == 0 || n > wire::kMaxMessage || n > max_bytes) return 0;
  body->resize(n);
  return RecvLocked(body->data(), n, deadline);
}

TCPStore::Reply TCPStore::Call(const Bytes& request, std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ < 0) Connect(options_.connect_timeout);
  auto fail = [&](const char* what) {
    CloseLocked();
    FLOTILLA_THROW(Unavailable, "store at ", address(), ": ", what);
  };
  if (!SendLocked(request.data(), request.size())) fail("connection lost while sending");
  Bytes body;
  const int rc = RecvReply(Clock::now() + timeout + kReplySlack, &body);
  if (rc < 0) fail("no reply before the deadline");
  if (rc == 0) fail("connection lost while waiting for a reply");
  Reply reply;
  reply.status = body[0];
  reply.body.assign(body.begin() + 1, body.end());
  if (reply.status == wire::kBadRequest) {
    CloseLocked();
    FLOTILLA_THROW(InvalidArgument, "store at ", address(), " rejected a request: ",
                   reply.reader().str());
  }
  return reply;
}

void TCPStore::set(const std::string& key, const Bytes& value) {
  Call(wire::Writer().u8(wire::kSet).str(key).bytes(value.data(), value.size()).Framed(),
       options_.connect_timeout);
}

Bytes TCPStore::get(const std::string& key) {
  auto t = timeout();
  Reply r = Call(wire::Writer().u8(wire::kGet).str(key).i64(t.count()).Framed(), t);
  if (r.status == wire::kTimeout) {
    FLOTILLA_THROW(DeadlineExceeded, MissingKeysMessage("TCPStore " + address(), {key}, t));
  }
  return r.reader().bytes();
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  Reply r = Call(wire::Writer().u8(wire::kAdd).str(key).i64(delta).Framed(),
                 options_.connect_timeout);
  return r.reader().i64();
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  Reply r = Call(wire::Writer().u8(wire::kCheck).strs(keys).Framed(), options_.connect_timeout);
  return r.reader().u8() != 0;
}

void TCPStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  Reply r = Call(wire::Writer().u8(wire::kWait).strs(keys).i64(timeout.count()).Framed(), timeout);
  if (r.status == wire::kTimeout) {
    FLOTILLA_THROW(DeadlineExceeded,
                   MissingKeysMessage("TCPStore " + address(), r.reader().strs(), timeout));
  }
}

bool TCPStore::deleteKey(const std::string& key) {
  Reply r = Call(wire::Writer().u8(wire::kDelete).str(key).Framed(), options_.connect_timeout);
  return r.reader().u8() != 0;
}

std::shared_ptr<Store> ConnectStore(const std::string& address, TCPStoreOptions options) {
  HostPort hp = ParseHostPort(address, "store address");
  return std::make_shared<TCPStore>(hp.host, hp.port, std::move(options));
}

}  // namespace flotilla::comm
