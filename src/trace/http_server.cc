#include "flotilla/trace/http_server.h"

#include <httplib.h>

#include <mutex>
#include <thread>

#include "flotilla/common/enforce.h"
#include "flotilla/common/env.h"
#include "flotilla/common/strings.h"
#include "flotilla/common/file_util.h"
#include "flotilla/common/logging.h"
#include "flotilla/trace/metrics.h"
#include "flotilla/trace/process_info.h"
#include "trace/runtime.h"
#include "trace/settings.h"

namespace flotilla::trace {

struct HttpServer::Impl {
  httplib::Server server;
  std::thread thread;
  std::mutex mu;
  std::function<std::pair<bool, std::string>()> health;  // guarded by mu
};

HttpServer::HttpServer(const std::string& host, int port) : impl_(std::make_unique<Impl>()) {
  impl_->server.new_task_queue = [] { return new httplib::ThreadPool(2); };
  if (port == 0) {
    port_ = impl_->server.bind_to_any_port(host);
  } else if (impl_->server.bind_to_port(host, port)) {
    port_ = port;
  }
  FLOTILLA_CHECK(port_ > 0, Unavailable, "cannot serve HTTP on ", host, ":", port,
                 " (in use? choose another port)");
  impl_->server.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(MetricsRegistry::Global().PrometheusText(),
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  impl_->server.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    std::pair<bool, std::string> state{true, "ok"};
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      if (impl_->health) state = impl_->health();
    }
    res.status = state.first ? 200 : 503;
    res.set_content(state.second + "\n", "text/plain; charset=utf-8");
  });
}

HttpServer::~HttpServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

void HttpServer::Handle(const std::string& pattern, HttpHandler handler) {
  impl_->server.Get(pattern, [handler = std::move(handler)](const httplib::Request& req,
                                                            httplib::Response& res) {
    HttpRequest r{req.path, {}};
    for (const auto& [k, v] : req.params) r.query[k] = v;
    HttpReply reply;
    try {
      reply = handler(r);
    } catch (const std::exception& e) {
      reply = {500, "text/plain; charset=utf-8", e.what()};
    }
    res.status = reply.status;
    res.set_content(reply.body, reply.content_type);
  });
}

void HttpServer::SetHealthCheck(std::function<std::pair<bool, std::string>()> check) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->health = std::move(check);
}

void HttpServer::Start() {
  if (impl_->thread.joinable()) return;
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
}

int ServeMetrics(bool always) {
  static std::mutex mu;
  static std::unique_ptr<HttpServer> server;  // lives until exit
  std::lock_guard<std::mutex> lock(mu);
  if (server) return server->port();
  const int64_t port = env::GetIntInRange("FLOTILLA_METRICS_PORT", -1, -1, kMaxPort,
                                          "-1: none, 0: any free port");
  if (port < 0 && !always) return 0;
  try {
    server = std::make_unique<HttpServer>("0.0.0.0", port < 0 ? 0 : static_cast<int>(port));
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
  if (!dir.empty()) {
    try {
      MakeDirs(dir);
      WriteFileAtomic(dir + "/" + Self().file_stem() + ".url",
                      "http://" + Self().host + ":" + std::to_string(server->port()) + "\n");
    } catch (const Error& e) {
      log::Warn("cannot record the metrics address: {}", e.what());
    }
  }
  log::Info("metrics on http://{}:{}/metrics", Self().host, server->port());
  return server->port();
}

}  // namespace flotilla::trace
