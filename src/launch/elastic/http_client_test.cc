// The etcd HTTP client against canned replies from a loopback server: bad
// chunk sizes and oversized replies fail as Unavailable, so the client
// fails over to the next endpoint instead of dying.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "flotilla/common/error.h"
#include "launch/elastic/etcd_client.h"
#include "launch/elastic/http_client.h"

namespace flotilla::launch {
namespace {

using namespace std::chrono_literals;

// Answers every connection on a loopback port with `reply`, then closes it.
class CannedServer {
 public:
  explicit CannedServer(std::string reply) : reply_(std::move(reply)) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(listen(fd_, 16), 0);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~CannedServer() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }

 private:
  void Serve() {
    while (!stop_) {
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = recv(c, buf, sizeof(buf), 0);
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      (void)!send(c, reply_.data(), reply_.size(), MSG_NOSIGNAL);
      close(c);
    }
  }
  std::string reply_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::string Chunked(const std::string& chunks) {
  return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks;
}

TEST(HttpClient, MalformedOrHugeChunkSizesAreUnavailable) {
  for (const std::string& chunks :
       {std::string("zz\r\n{}\r\n0\r\n\r\n"), std::string("ffffffffffffffff\r\nx\r\n0\r\n\r\n"),
        std::string("fffffffffffffffffffff\r\nx\r\n"), std::string("-1\r\n"),
        std::string("\r\n"), std::string(2000, '7')}) {
    CannedServer server(Chunked(chunks));
    try {
      HttpPost("127.0.0.1", server.port(), "/v3/kv/range", "{}", 2s);
      ADD_FAILURE() << "accepted chunks '" << chunks.substr(0, 40) << "'";
    } catch (const Unavailable& e) {
      EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(server.port())),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(HttpClient, NegativeContentLengthIsUnavailable) {
  CannedServer server("HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n{}");
  EXPECT_THROW(HttpPost("127.0.0.1", server.port(), "/v3/kv/range", "{}", 2s), Unavailable);
}

TEST(EtcdClient, ABadChunkFromOneEndpointFailsOverToTheNext) {
  CannedServer bad(Chunked("zz\r\n"));
  const std::string body = R"({"header":{"revision":"7"}})";
  CannedServer good("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\n\r\n" + body);
  EtcdOptions options;
  options.endpoints = {{"127.0.0.1", bad.port()}, {"127.0.0.1", good.port()}};
  options.timeout = 2s;
  EtcdClient etcd(options);
  EXPECT_EQ(etcd.GetPrefix("/flotilla/job/").revision, 7);
}

}  // namespace
}  // namespace flotilla::launch
