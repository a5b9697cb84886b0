// Fuzzes what the elastic launcher reads from etcd: the HTTP/1.1 responses
// of its JSON gateway (status line, headers, Content-Length, chunked and
// read-to-EOF bodies) and the JSON inside them (key-values, revisions,
// leases, transactions, watch streams), through a real EtcdClient talking
// to a loopback responder that answers every connection with the input.
//
// Input: an operation byte (get, get-prefix, put, delete, grant, keep-alive,
// revoke, transaction, watch), then the bytes the responder sends before it
// closes its side.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "flotilla/common/error.h"
#include "fuzz/fuzz_input.h"
#include "launch/elastic/etcd_client.h"

namespace flotilla::fuzz {
namespace {

// Accepts one connection at a time on 127.0.0.1, sends the current response,
// half-closes, and reads the request until the client closes.
class Responder {
 public:
  Responder() {
    listen_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (listen_ < 0 || ::bind(listen_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listen_, 16) != 0 ||
        ::getsockname(listen_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      std::abort();
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~Responder() {
    stop_ = true;
    thread_.join();
    ::close(listen_);
  }
  int port() const { return port_; }
  void set_response(std::string response) {
    std::lock_guard<std::mutex> lock(mu_);
    response_ = std::move(response);
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{listen_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int fd = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::string response;
      {
        std::lock_guard<std::mutex> lock(mu_);
        response = response_;
      }
      size_t sent = 0;
      while (sent < response.size()) {
        ssize_t k = ::send(fd, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
        if (k <= 0) break;
        sent += static_cast<size_t>(k);
      }
      ::shutdown(fd, SHUT_WR);
      Drain(fd);
      ::close(fd);
    }
  }
  void Drain(int fd) {
    char buf[4096];
    while (!stop_) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) == 0) continue;
      if (::recv(fd, buf, sizeof(buf), 0) <= 0) return;
    }
  }

  int listen_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::string response_;
  std::thread thread_;
};

Responder& TheResponder() {
  static Responder* responder = new Responder();  // serves until the process ends
  return *responder;
}

void Operate(launch::EtcdClient& etcd, uint8_t op) {
  switch (op % 9) {
    case 0: (void)etcd.Get("key"); return;
    case 1: (void)etcd.GetPrefix("/job/"); return;
    case 2: etcd.Put("key", "value", 7); return;
    case 3: (void)etcd.Delete("key"); return;
    case 4: (void)etcd.GrantLease(10); return;
    case 5: (void)etcd.KeepAlive(7); return;
    case 6: etcd.RevokeLease(7); return;
    case 7: (void)etcd.PutIfModRevision("key", "value", 3); return;
    default: {
      auto watch = etcd.WatchPrefix("/job/", 2);
      for (int i = 0; i < 4; ++i) (void)watch->Next(std::chrono::milliseconds(20));
      return;
    }
  }
}

}  // namespace
}  // namespace flotilla::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flotilla::fuzz;
  FuzzInput in(data, size);
  const uint8_t op = in.U8();
  Responder& responder = TheResponder();
  responder.set_response(in.Rest());
  flotilla::launch::EtcdOptions options;
  options.endpoints = {flotilla::HostPort{"127.0.0.1", responder.port()}};
  options.timeout = std::chrono::milliseconds(2000);
  flotilla::launch::EtcdClient etcd(options);
  try {
    Operate(etcd, op);
  } catch (const flotilla::Error&) {
    // refused with a named error
  }
  return 0;
}
