#include "flotilla/trace/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <regex>
#include <thread>
#include <vector>

#include "flotilla/common/enforce.h"
#include "flotilla/common/env.h"
#include "flotilla/common/file_util.h"
#include "flotilla/common/logging.h"
#include "flotilla/common/loopback.h"
#include "flotilla/common/strings.h"
#include "flotilla/common/tls_files.h"
#include "flotilla/trace/metrics.h"
#include "flotilla/trace/process_info.h"
#include "trace/http_request.h"
#include "trace/runtime.h"
#include "trace/settings.h"

namespace flotilla::trace {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kTick = std::chrono::milliseconds(50);  // deadline resolution
constexpr uint64_t kListenTag = 0, kWakeTag = 1;       // epoll tags below connection ids

void CountRefusal(const char* reason) {
  MetricsRegistry::Global()
      .GetCounter("flotilla_http_refusals_total",
                  "HTTP requests refused or connections closed early, by reason",
                  {{"reason", reason}})
      .Add();
}

struct Conn {
  int fd = -1;
  SSL* ssl = nullptr;  // owned; null for plain HTTP
  Clock::time_point deadline;
  enum State { kReading, kHandling, kWriting } state = kReading;
  std::string in;
  std::string out;
  size_t sent = 0;
};

struct Job {
  uint64_t conn = 0;
  bool head = false;
  HttpRequest request;
};

struct Done {
  uint64_t conn = 0;
  std::string bytes;
};

std::pair<std::string, int> SocketAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {"", 0};
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof host, serv, sizeof serv,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return {"", 0};
  }
  return {host, std::atoi(serv)};
}

int Listen(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  FLOTILLA_CHECK(rc == 0, Unavailable, "cannot serve HTTP on ", host, ":", port, ": ",
                 gai_strerror(rc));
  std::string why = "no address";
  int fd = -1;
  for (addrinfo* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
      why = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  FLOTILLA_CHECK(fd >= 0, Unavailable, "cannot serve HTTP on ", host, ":", port, ": ", why,
                 " (in use? choose another port)");
  return fd;
}

}  // namespace

struct HttpServer::Impl {
  HttpServerOptions options;
  int listen_fd = -1;
  int epoll_fd = -1;
  int wake_fd = -1;
  SSL_CTX* tls = nullptr;  // owned; null for plain HTTP
  std::vector<std::pair<std::regex, HttpHandler>> routes;  // fixed once started
  std::map<std::string, HttpHandler> fast;                 // fixed once started
  std::mutex health_mu;
  std::function<std::pair<bool, std::string>()> health;  // guarded by health_mu

  // Owned by the event loop.
  std::map<uint64_t, Conn> conns;  // by id: the oldest first
  uint64_t next_id = 2;
  bool accept_paused = false;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> jobs;    // guarded by mu
  std::deque<Done> done;   // guarded by mu
  bool stopping = false;   // guarded by mu
  std::thread loop;
  std::vector<std::thread> workers;

  ~Impl() {
    for (auto& [id, c] : conns) {
      SSL_free(c.ssl);
      close(c.fd);
    }
    SSL_CTX_free(tls);
    for (int fd : {listen_fd, epoll_fd, wake_fd}) {
      if (fd >= 0) close(fd);
    }
  }

  void Watch(int fd, uint64_t tag, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    epoll_ctl(epoll_fd, op, fd, &ev);
  }

  void Wake() {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = write(wake_fd, &one, sizeof one);
  }

  void CloseConn(uint64_t id) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    SSL_free(it->second.ssl);
    close(it->second.fd);  // also leaves the epoll set
    conns.erase(it);
  }

  // Makes room for one more connection: closes the oldest one still sending
  // its request. False when every open connection is past that stage.
  bool EvictOldest() {
    for (auto& [id, c] : conns) {
      if (c.state != Conn::kReading) continue;
      CountRefusal("evicted");
      CloseConn(id);
      return true;
    }
    return false;
  }

  void Accept() {
    while (true) {
      if (conns.size() >= options.max_connections && !EvictOldest()) {
        PauseAccept();
        return;
      }
      const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if ((errno == EMFILE || errno == ENFILE) && EvictOldest()) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) PauseAccept();
        return;
      }
      const uint64_t id = next_id++;
      Conn& c = conns[id];
      c.fd = fd;
      if (tls != nullptr) {
        c.ssl = SSL_new(tls);
        if (c.ssl == nullptr || SSL_set_fd(c.ssl, fd) != 1) {
          CloseConn(id);
          continue;
        }
        SSL_set_accept_state(c.ssl);
      }
      c.deadline = Clock::now() + options.request_timeout;
      Watch(fd, id, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD);
    }
  }

  // Out of descriptors with nothing to evict: retry on the next tick.
  void PauseAccept() {
    if (accept_paused) return;
    accept_paused = true;
    Watch(listen_fd, kListenTag, 0, EPOLL_CTL_MOD);
  }

  void Reply(uint64_t id, std::string bytes) {
    auto it = conns.find(id);
    if (it == conns.end()) return;  // the client went away meanwhile
    Conn& c = it->second;
    c.state = Conn::kWriting;
    c.out = std::move(bytes);
    c.sent = 0;
    c.deadline = Clock::now() + options.write_timeout;
    Watch(c.fd, id, EPOLLOUT, EPOLL_CTL_MOD);
    Write(id);
  }

  // Bytes received (> 0), 0 at the end of the stream, kAgain when none are
  // there yet, kFailed on an error. Through TLS when the connection has it.
  static constexpr ssize_t kAgain = -1, kFailed = -2;
  static ssize_t Receive(Conn& c, char* buf, size_t n) {
    while (true) {
      if (c.ssl != nullptr) {
        const int r = SSL_read(c.ssl, buf, static_cast<int>(n));
        if (r > 0) return r;
        const int e = SSL_get_error(c.ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return kAgain;
        return e == SSL_ERROR_ZERO_RETURN ? 0 : kFailed;
      }
      const ssize_t r = recv(c.fd, buf, n, 0);
      if (r >= 0) return r;
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? kAgain : kFailed;
    }
  }

  static ssize_t SendSome(Conn& c, const char* data, size_t n) {
    while (true) {
      if (c.ssl != nullptr) {
        const int r = SSL_write(c.ssl, data, static_cast<int>(n));
        if (r > 0) return r;
        const int e = SSL_get_error(c.ssl, r);
        return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? kAgain : kFailed;
      }
      const ssize_t r = send(c.fd, data, n, MSG_NOSIGNAL);
      if (r > 0) return r;
      if (r < 0 && errno == EINTR) continue;
      return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? kAgain : kFailed;
    }
  }

  void Write(uint64_t id) {
    Conn& c = conns.at(id);
    while (c.sent < c.out.size()) {
      const ssize_t n = SendSome(c, c.out.data() + c.sent, c.out.size() - c.sent);
      if (n == kAgain) return;
      if (n < 0) return CloseConn(id);
      c.sent += static_cast<size_t>(n);
    }
    if (c.ssl != nullptr) SSL_shutdown(c.ssl);  // close_notify; not waited for
    char sink[4096];  // unread bytes at close() would turn the FIN into a reset
    while (recv(c.fd, sink, sizeof sink, 0) > 0) {
    }
    shutdown(c.fd, SHUT_WR);
    CloseConn(id);
  }

  void Read(uint64_t id, uint32_t events) {
    Conn& c = conns.at(id);
    if (c.state == Conn::kWriting) return Write(id);
    if (c.state != Conn::kReading) {  // a handler is running: only a hang-up matters
      if (events & (EPOLLHUP | EPOLLERR)) CloseConn(id);
      return;
    }
    char buf[4096];
    bool ended = false;  // the client sent all it will (it may still read)
    while (true) {
      const ssize_t n = Receive(c, buf, sizeof buf);
      if (n == kAgain) break;
      if (n < 0) return CloseConn(id);
      if (n == 0) {
        ended = true;
        break;
      }
      c.in.append(buf, static_cast<size_t>(n));
      if (c.in.size() > options.max_request_bytes) break;
    }
    Parsed p = ParseRequest(c.in, options.max_request_bytes);
    if (p.kind == Parsed::kIncomplete) {
      if (ended) CloseConn(id);
      return;
    }
    c.in.clear();
    if (p.kind == Parsed::kError) {
      CountRefusal(p.status == 431 || p.status == 413 ? "too_large" : "malformed");
      return Reply(id, Serialize(Text(p.status, StrCat(Reason(p.status), "\n")), false));
    }
    Dispatch(id, std::move(p));
  }

  void Dispatch(uint64_t id, Parsed p) {
    if (auto it = fast.find(p.request.path); it != fast.end()) {
      return Reply(id, Serialize(Run(it->second, p.request), p.head));
    }
    if (p.request.path == "/healthz") return Reply(id, Serialize(Health(), p.head));
    {
      std::lock_guard<std::mutex> lock(mu);
      if (jobs.size() < options.max_queued) {
        jobs.push_back({id, p.head, std::move(p.request)});
        cv.notify_one();
        conns.at(id).state = Conn::kHandling;
        Watch(conns.at(id).fd, id, 0, EPOLL_CTL_MOD);  // hang-ups only
        return;
      }
    }
    CountRefusal("busy");
    Reply(id, Serialize(Text(503, "busy: too many requests queued\n"), p.head));
  }

  HttpReply Health() {
    std::pair<bool, std::string> state{true, "ok"};
    {
      std::lock_guard<std::mutex> lock(health_mu);
      if (health) state = health();
    }
    return Text(state.first ? 200 : 503, state.second + "\n");
  }

  static HttpReply Run(const HttpHandler& handler, const HttpRequest& request) {
    try {
      return handler(request);
    } catch (const std::exception& e) {
      return Text(500, StrCat(e.what(), "\n"));
    }
  }

  HttpReply Route(const HttpRequest& request) {
    for (const auto& [pattern, handler] : routes) {
      if (std::regex_match(request.path, pattern)) return Run(handler, request);
    }
    return Text(404, "not found\n");
  }

  void Sweep() {
    const auto now = Clock::now();
    std::vector<uint64_t> late;
    for (const auto& [id, c] : conns) {
      if (c.state != Conn::kHandling && now >= c.deadline) late.push_back(id);
    }
    for (uint64_t id : late) {
      Conn& c = conns.at(id);
      if (c.state == Conn::kReading && !c.in.empty()) {
        CountRefusal("request_timeout");
        Reply(id, Serialize(Text(408, "request not received in time\n"), false));
        // One try to say why; a client that reads nothing is not waited for.
        if (conns.count(id)) CloseConn(id);
      } else {
        CountRefusal(c.state == Conn::kReading ? "idle_timeout" : "write_timeout");
        CloseConn(id);
      }
    }
    if (accept_paused) {
      accept_paused = false;
      Watch(listen_fd, kListenTag, EPOLLIN, EPOLL_CTL_MOD);
    }
  }

  void Loop() {
    std::vector<epoll_event> events(256);
    auto next_sweep = Clock::now() + kTick;
    while (true) {
      // Rounded up: a wait rounded down to 0 ms would spin until the sweep.
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next_sweep - Clock::now());
      const int n = epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()),
                               std::max<int>(0, static_cast<int>(wait.count())));
      for (int i = 0; i < n; ++i) {
        const uint64_t tag = events[i].data.u64;
        if (tag == kListenTag) {
          Accept();
        } else if (tag == kWakeTag) {
          uint64_t count;
          [[maybe_unused]] const ssize_t r = read(wake_fd, &count, sizeof count);
        } else if (conns.count(tag)) {
          Read(tag, events[i].events);
        }
      }
      std::deque<Done> replies;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (stopping) return;
        replies.swap(done);
      }
      for (Done& d : replies) Reply(d.conn, std::move(d.bytes));
      if (Clock::now() >= next_sweep) {
        Sweep();
        next_sweep = Clock::now() + kTick;
      }
    }
  }

  void Work() {
    while (true) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return stopping || !jobs.empty(); });
        if (stopping) return;
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      std::string bytes = Serialize(Route(job.request), job.head);
      {
        std::lock_guard<std::mutex> lock(mu);
        done.push_back({job.conn, std::move(bytes)});
      }
      Wake();
    }
  }
};

std::string SslError() {
  char buf[256] = "unknown TLS error";
  if (const unsigned long e = ERR_get_error()) ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

// The server side of TLS: the job's certificate and key, TLS 1.2 or later.
SSL_CTX* MakeTlsContext(const TlsFiles& tls) {
  FLOTILLA_CHECK(!tls.cert.empty() && !tls.key.empty(), InvalidArgument,
                 "serving HTTPS needs a certificate and its key (FLOTILLA_TLS_CERT and "
                 "FLOTILLA_TLS_KEY, or --tls_cert and --tls_key)");
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  FLOTILLA_CHECK(ctx != nullptr, Unavailable, "cannot serve HTTPS: ", SslError());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_use_certificate_chain_file(ctx, tls.cert.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, tls.key.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    const std::string why = SslError();
    SSL_CTX_free(ctx);
    FLOTILLA_THROW(InvalidArgument, "cannot serve HTTPS with ", tls.cert, " and ", tls.key, ": ",
                   why);
  }
  return ctx;
}

HttpServer::HttpServer(const std::string& host, int port)
    : HttpServer(HttpServerOptions{.host = host, .port = port}) {}

HttpServer::HttpServer(HttpServerOptions options) : impl_(std::make_unique<Impl>()) {
  FLOTILLA_ENFORCE(options.port >= 0 && options.port <= 65535, "HTTP port ", options.port,
                   " is outside [0, 65535]");
  FLOTILLA_ENFORCE(options.workers >= 1 && options.max_connections >= 1,
                   "an HTTP server needs a worker and a connection");
  impl_->options = std::move(options);
  if (impl_->options.tls.enabled()) impl_->tls = MakeTlsContext(impl_->options.tls);
  const std::string host = impl_->options.host;
  impl_->listen_fd = Listen(host.size() > 2 && host.front() == '[' ? host.substr(1, host.size() - 2)
                                                                   : host,
                            impl_->options.port);
  std::tie(bound_host_, port_) = SocketAddress(impl_->listen_fd);
  impl_->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  impl_->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  FLOTILLA_CHECK(impl_->epoll_fd >= 0 && impl_->wake_fd >= 0, Unavailable,
                 "cannot serve HTTP: ", std::strerror(errno));
  Handle("/metrics", [](const HttpRequest&) {
    return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8",
                     MetricsRegistry::Global().PrometheusText(), {}};
  });
}

HttpServer::~HttpServer() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->wake_fd >= 0) impl_->Wake();
  if (impl_->loop.joinable()) impl_->loop.join();
  for (std::thread& t : impl_->workers) t.join();
}

std::string HttpServer::url() const {
  const bool v6 = bound_host_.find(':') != std::string::npos;
  return StrCat(impl_->tls != nullptr ? "https://" : "http://", v6 ? "[" : "", bound_host_,
                v6 ? "]" : "", ":", port_);
}

void HttpServer::Handle(const std::string& pattern, HttpHandler handler) {
  FLOTILLA_ENFORCE(!impl_->loop.joinable(), "HttpServer::Handle after Start()");
  impl_->routes.emplace_back(std::regex(pattern), std::move(handler));
}

void HttpServer::HandleFast(const std::string& path, HttpHandler handler) {
  FLOTILLA_ENFORCE(!impl_->loop.joinable(), "HttpServer::HandleFast after Start()");
  impl_->fast[path] = std::move(handler);
}

void HttpServer::SetHealthCheck(std::function<std::pair<bool, std::string>()> check) {
  std::lock_guard<std::mutex> lock(impl_->health_mu);
  impl_->health = std::move(check);
}

void HttpServer::Start() {
  if (impl_->loop.joinable()) return;
  impl_->Watch(impl_->listen_fd, kListenTag, EPOLLIN, EPOLL_CTL_ADD);
  impl_->Watch(impl_->wake_fd, kWakeTag, EPOLLIN, EPOLL_CTL_ADD);
  for (int i = 0; i < impl_->options.workers; ++i) {
    impl_->workers.emplace_back([this] {
      pthread_setname_np(pthread_self(), "http worker");  // as top and /proc show it
      impl_->Work();
    });
  }
  impl_->loop = std::thread([this] {
    pthread_setname_np(pthread_self(), "http loop");
    impl_->Loop();
  });
}

int ServeMetrics() {
  static std::mutex mu;
  static std::unique_ptr<HttpServer> server;  // lives until exit
  std::lock_guard<std::mutex> lock(mu);
  if (server) return server->port();
  const int64_t port = env::GetIntInRange("FLOTILLA_METRICS_PORT", -1, -1, kMaxPort,
                                          "-1: none, 0: any free port");
  if (port < 0) return 0;
  const std::string host = env::GetOr("FLOTILLA_METRICS_HOST", "127.0.0.1");
  try {
    HttpServerOptions options{.host = host, .port = static_cast<int>(port)};
    if (!IsLoopbackHost(host)) options.tls = TlsFilesFromEnv();  // off this host: the job's TLS
    server = std::make_unique<HttpServer>(std::move(options));
    server->SetHealthCheck([] {  // 503 while a call is stalled (a liveness probe's answer)
      const std::string stalled = StalledRecord();
      return stalled.empty() ? std::make_pair(true, std::string("ok"))
                             : std::make_pair(false, "stalled: " + stalled);
    });
    server->Start();
  } catch (const Error& e) {
    log::Warn("metrics endpoint not served: {}", e.what());
    return 0;
  }
  const std::string& dir = Settings::Get().metrics_dir;
  // What a scraper dials: the bound address, or this host's when bound to all.
  const bool any = server->bound_host() == "0.0.0.0" || server->bound_host() == "::";
  const std::string reach =
      any ? StrCat(server->url().substr(0, server->url().find("://") + 3), Self().host, ":",
                   server->port())
          : server->url();
  if (!dir.empty()) {
    try {
      MakeDirs(dir);
      WriteFileAtomic(dir + "/" + Self().file_stem() + ".url", reach + "\n");
    } catch (const Error& e) {
      log::Warn("cannot record the metrics address: {}", e.what());
    }
  }
  log::Info("metrics on {}/metrics", server->url());
  return server->port();
}

}  // namespace flotilla::trace
