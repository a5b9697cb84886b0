#include "flotilla/comm/tcp_store.h"

#include <unistd.h>

#include <thread>

#include "comm/store/socket_util.h"
#include "comm/store/wire.h"
#include "flotilla/comm/hash_store.h"
#include "flotilla/common/enforce.h"
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
  timeout_ = options_.timeout;
  std::lock_guard<std::mutex> lock(mu_);
  Connect(options_.connect_timeout);
}

TCPStore::~TCPStore() { CloseLocked(); }

std::string TCPStore::address() const { return host_ + ":" + std::to_string(port_); }

void TCPStore::CloseLocked() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void TCPStore::Connect(std::chrono::milliseconds budget) {
  auto deadline = Clock::now() + budget;
  auto pause = std::chrono::milliseconds(20);
  std::string error;
  while (true) {
    net::Fd fd = net::TryConnect(host_, port_, &error);
    if (fd) {
      fd_ = fd.release();
      break;
    }
    FLOTILLA_CHECK(Clock::now() < deadline, Unavailable, "cannot reach store at ", address(),
                   " within ", budget.count(), "ms: ", error);
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
  }
  Bytes hello = wire::Writer().u8(wire::kHello).str(options_.token).Framed();
  uint8_t header[5];
  bool ok = net::SendAll(fd_, hello.data(), hello.size()) &&
            net::RecvAll(fd_, header, 5, Clock::now() + budget + kReplySlack) == 1;
  if (!ok || header[4] != wire::kOk) {
    CloseLocked();
    FLOTILLA_THROW(Unavailable, "store at ", address(), " refused the token (",
                   options_.token.empty() ? "none was sent" : "not the job secret it expects",
                   "; FLOTILLA_JOB_SECRET_FILE / FLOTILLA_JOB_SECRET)");
  }
}

TCPStore::Reply TCPStore::Call(const Bytes& request, std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ < 0) Connect(options_.connect_timeout);
  auto fail = [&](const char* what) {
    CloseLocked();
    FLOTILLA_THROW(Unavailable, "store at ", address(), ": ", what);
  };
  if (!net::SendAll(fd_, request.data(), request.size())) fail("connection lost while sending");
  auto deadline = Clock::now() + timeout + kReplySlack;
  uint32_t n = 0;
  int rc = net::RecvAll(fd_, &n, 4, deadline);
  if (rc < 0) fail("no reply before the deadline");
  if (rc == 0 || n == 0 || n > wire::kMaxMessage) fail("connection lost while waiting for a reply");
  Bytes body(n);
  if (net::RecvAll(fd_, body.data(), n, deadline) != 1) fail("connection lost reading a reply");
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
  auto t = timeout_;
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
