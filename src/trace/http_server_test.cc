// The HTTP server against clients that trickle, idle, flood or break the
// protocol: the probes stay answered, the others get bounded shares.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "flotilla/common/error.h"
#include "flotilla/trace/http_server.h"

namespace flotilla::trace {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A connected client socket; closed on destruction.
class Client {
 public:
  explicit Client(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~Client() { close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }
  void Send(const std::string& s) { (void)send(fd_, s.data(), s.size(), MSG_NOSIGNAL); }
  // Everything until the server closes, or "" past `timeout`.
  std::string ReadAll(std::chrono::milliseconds timeout = 3000ms) {
    std::string out;
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return out.empty() ? "(closed)" : out;
      out.append(buf, static_cast<size_t>(n));
    }
    return "";
  }

 private:
  int fd_;
  bool connected_ = false;
};

std::string Get(int port, const std::string& path, const std::string& extra = "") {
  Client c(port);
  c.Send("GET " + path + " HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n");
  return c.ReadAll();
}

std::string StatusLine(const std::string& reply) { return reply.substr(0, reply.find("\r\n")); }

TEST(HttpServer, BindsLoopbackAndReportsTheBoundAddress) {
  HttpServer http(HttpServerOptions{});
  EXPECT_EQ(http.bound_host(), "127.0.0.1");
  EXPECT_GT(http.port(), 0);
  EXPECT_EQ(http.url(), "http://127.0.0.1:" + std::to_string(http.port()));
  EXPECT_THROW(HttpServer("127.0.0.1", 99999), InvalidArgument);
}

TEST(HttpServer, RoutesQueriesHeadersAndErrors) {
  HttpServer http(HttpServerOptions{});
  http.Handle("/echo/([a-z]+)", [](const HttpRequest& r) {
    return HttpReply{200, "text/plain", r.path + " " + r.query.at("a") + " " + r.headers.at("x-k"),
                     {{"X-Seen", "1"}}};
  });
  http.Handle("/boom", [](const HttpRequest&) -> HttpReply { throw std::runtime_error("bad"); });
  http.Start();
  const std::string ok = Get(http.port(), "/echo/abc?a=b%20c", "X-K: v\r\n");
  EXPECT_EQ(StatusLine(ok), "HTTP/1.1 200 OK");
  EXPECT_NE(ok.find("\r\n\r\n/echo/abc b c v"), std::string::npos) << ok;
  EXPECT_NE(ok.find("X-Seen: 1\r\n"), std::string::npos) << ok;
  EXPECT_EQ(StatusLine(Get(http.port(), "/nothing")), "HTTP/1.1 404 Not Found");
  EXPECT_EQ(StatusLine(Get(http.port(), "/boom")), "HTTP/1.1 500 Internal Server Error");
  EXPECT_EQ(StatusLine(Get(http.port(), "/metrics")), "HTTP/1.1 200 OK");
  Client post(http.port());
  post.Send("POST /healthz HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi");
  EXPECT_EQ(StatusLine(post.ReadAll()), "HTTP/1.1 405 Method Not Allowed");
  Client big(http.port());
  big.Send("GET / HTTP/1.1\r\nX: " + std::string(9000, 'a') + "\r\n\r\n");
  EXPECT_EQ(StatusLine(big.ReadAll()), "HTTP/1.1 431 Request Header Fields Too Large");
  Client chunked(http.port());
  chunked.Send("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(StatusLine(chunked.ReadAll()), "HTTP/1.1 501 Not Implemented");
  Client garbage(http.port());
  garbage.Send("hello\r\n\r\n");
  EXPECT_EQ(StatusLine(garbage.ReadAll()), "HTTP/1.1 400 Bad Request");
}

TEST(HttpServer, ASlowRequestIsCutAtItsDeadlineWhileProbesAreAnswered) {
  HttpServerOptions o;
  o.request_timeout = 600ms;
  HttpServer http(o);
  http.SetHealthCheck([] { return std::make_pair(false, std::string("stalled: x")); });
  http.Start();
  std::vector<std::unique_ptr<Client>> slow, idle;
  for (int i = 0; i < 8; ++i) slow.push_back(std::make_unique<Client>(http.port()));
  for (int i = 0; i < 50; ++i) idle.push_back(std::make_unique<Client>(http.port()));
  for (const char c : std::string("GET /met")) {
    for (auto& s : slow) s->Send(std::string(1, c));
    const auto start = Clock::now();
    EXPECT_EQ(StatusLine(Get(http.port(), "/healthz")), "HTTP/1.1 503 Service Unavailable");
    EXPECT_LT(Clock::now() - start, 100ms);
    std::this_thread::sleep_for(50ms);
  }
  for (auto& s : slow) EXPECT_EQ(StatusLine(s->ReadAll(2000ms)), "HTTP/1.1 408 Request Timeout");
  for (auto& s : idle) EXPECT_EQ(s->ReadAll(2000ms), "(closed)");
}

TEST(HttpServer, ProbesOnTheLoopWhileEveryWorkerIsBusyAndTheQueueFull) {
  HttpServerOptions o;
  o.workers = 2;
  o.max_queued = 2;
  HttpServer http(o);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> started{0};
  http.Handle("/slow", [&](const HttpRequest&) {
    ++started;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });
    return HttpReply{200, "text/plain", "done", {}};
  });
  http.HandleFast("/readyz", [](const HttpRequest&) {
    return HttpReply{200, "text/plain", "ready", {}};
  });
  http.Start();
  std::vector<std::unique_ptr<Client>> busy;
  for (int i = 0; i < 4; ++i) {  // two running, then two queued
    busy.push_back(std::make_unique<Client>(http.port()));
    busy.back()->Send("GET /slow HTTP/1.1\r\n\r\n");
    while (i == 1 && started < 2) std::this_thread::sleep_for(5ms);
  }
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(StatusLine(Get(http.port(), "/slow")), "HTTP/1.1 503 Service Unavailable");
  EXPECT_EQ(StatusLine(Get(http.port(), "/healthz")), "HTTP/1.1 200 OK");
  EXPECT_EQ(StatusLine(Get(http.port(), "/readyz")), "HTTP/1.1 200 OK");
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  for (auto& c : busy) EXPECT_EQ(StatusLine(c->ReadAll()), "HTTP/1.1 200 OK");
}

TEST(HttpServer, AConnectionPastTheCapEvictsTheOldestStillSendingItsRequest) {
  HttpServerOptions o;
  o.max_connections = 4;
  HttpServer http(o);
  http.Start();
  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(std::make_unique<Client>(http.port()));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(StatusLine(Get(http.port(), "/healthz")), "HTTP/1.1 200 OK");
  EXPECT_EQ(idle[0]->ReadAll(1000ms), "(closed)");
}

}  // namespace
}  // namespace flotilla::trace
