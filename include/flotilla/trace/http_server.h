// HttpServer: a small HTTP endpoint (cpp-httplib) for /metrics (Prometheus
// text of MetricsRegistry::Global()), /healthz, and the routes a process
// adds (the launcher's dashboard). Two worker threads; GET only.
//
//   HttpServer http("0.0.0.0", 9100);       // binds now
//   http.Handle("/api/state", fn);          // before Start()
//   http.Start();                           // serves on its own thread
//
// Handlers run on the server's threads and must be thread-safe. The
// destructor stops serving and joins.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

namespace flotilla::trace {

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

struct HttpRequest {
  std::string path;
  std::map<std::string, std::string> query;
};

using HttpHandler = std::function<HttpReply(const HttpRequest&)>;

class HttpServer {
 public:
  // Binds host:port (port 0: any free port). Throws Unavailable naming the
  // address when it cannot.
  HttpServer(const std::string& host, int port);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Routes GET requests whose path matches the regex `pattern`.
  void Handle(const std::string& pattern, HttpHandler handler);
  // /healthz: 200 "ok" unless `check` returns {false, why} (then 503 why).
  void SetHealthCheck(std::function<std::pair<bool, std::string>()> check);
  void Start();
  int port() const { return port_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

// Serves this process's /metrics and /healthz (503 naming the call while a
// collective or parameter-server call is pending past the stall timeout):
// on FLOTILLA_METRICS_PORT
// when set, else (with `always`, for long-lived servers) on a free port;
// otherwise not at all. The address goes to FLOTILLA_METRICS_DIR/<label>.url
// when that is set. Idempotent; returns the port, 0 when not serving. A port
// that cannot be bound is logged, not thrown: metrics never stop training.
int ServeMetrics(bool always);

}  // namespace flotilla::trace
