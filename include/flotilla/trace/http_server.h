// HttpServer: a small HTTP/1.1 endpoint for /metrics (Prometheus text of
// MetricsRegistry::Global()), /healthz, and the routes a process adds (the
// launcher's /readyz and dashboard). GET and HEAD only; one request per
// connection.
//
//   HttpServer http({.host = "127.0.0.1", .port = 9100});  // binds now
//   http.Handle("/api/state", fn);                         // before Start()
//   http.Start();                                          // serves on its own threads
//
// Off loopback a job with TLS serves HTTPS (options.tls). A shared host is a
// hostile host, so a client gets a bounded share:
//  - one event-loop thread reads every request without blocking: a request
//    (line, headers, body) not complete within request_timeout of its
//    connection being accepted is answered 408 and closed, however slowly its
//    bytes trickle in; a reply not taken within write_timeout is dropped;
//  - at most max_connections are open: one more evicts the oldest connection
//    still sending its request (so does running out of file descriptors);
//  - /healthz and HandleFast routes are answered on the event loop itself, so
//    a probe is answered while every worker is busy; the other routes run on
//    `workers` threads behind a queue of max_queued requests (503 when full).
// Every refusal and timeout is counted in flotilla_http_refusals_total{reason}.
//
// Handlers run on the server's threads and must be thread-safe. The
// destructor stops serving and joins.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "flotilla/common/tls_files.h"

namespace flotilla::trace {

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::map<std::string, std::string> headers;  // extra response headers
};

struct HttpRequest {
  std::string path;
  std::map<std::string, std::string> query;
  std::map<std::string, std::string> headers;  // names in lower case
};

using HttpHandler = std::function<HttpReply(const HttpRequest&)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // loopback unless asked
  int port = 0;                    // 0: any free port
  std::chrono::milliseconds request_timeout{5000};
  std::chrono::milliseconds write_timeout{10000};
  size_t max_connections = 2048;
  size_t max_request_bytes = 8 * 1024;  // request line, headers and body
  int workers = 4;
  size_t max_queued = 64;
  // HTTPS with tls.cert and tls.key (clients are not asked for certificates:
  // a kubelet's probe presents none). Empty: plain HTTP.
  TlsFiles tls;
};

class HttpServer {
 public:
  // Binds options.host:port. Throws InvalidArgument for a port outside
  // [0, 65535], Unavailable naming the address when it cannot bind.
  explicit HttpServer(HttpServerOptions options);
  HttpServer(const std::string& host, int port);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Routes GET requests whose whole path matches the regex `pattern`
  // (the first registered match wins). Before Start().
  void Handle(const std::string& pattern, HttpHandler handler);
  // Routes GET requests for exactly `path` on the event loop: `handler` must
  // not block (a probe's answer). Before Start().
  void HandleFast(const std::string& path, HttpHandler handler);
  // /healthz: 200 "ok" unless `check` returns {false, why} (then 503 why).
  // `check` runs on the event loop: it must not block. Any time.
  void SetHealthCheck(std::function<std::pair<bool, std::string>()> check);
  void Start();

  int port() const { return port_; }
  // The address the socket is bound to, as the kernel reports it
  // ("127.0.0.1", "0.0.0.0", "::1").
  const std::string& bound_host() const { return bound_host_; }
  // "http[s]://HOST:PORT" of the bound socket (an IPv6 host in brackets).
  std::string url() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::string bound_host_;
};

// Serves this process's /metrics and /healthz (503 naming the call while a
// collective or parameter-server call is pending past the stall timeout) when
// FLOTILLA_METRICS_PORT is set (0: a free port), on FLOTILLA_METRICS_HOST
// (default 127.0.0.1); otherwise not at all. Off loopback while the job has
// TLS (FLOTILLA_TLS_CERT/KEY), it serves HTTPS with the job's certificate.
// The address goes to FLOTILLA_METRICS_DIR/<label>.url when that is set.
// Idempotent; returns the port, 0 when not serving. A port that cannot be
// bound is logged, not thrown: metrics never stop training.
int ServeMetrics();

}  // namespace flotilla::trace
