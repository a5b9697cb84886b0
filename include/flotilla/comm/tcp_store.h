// TCPStore: a Store served over TCP by one TCPStoreServer (hosted by the
// launcher or by rank 0) and used by any number of TCPStore clients.
//
// The server keeps the keys in memory and answers from one background thread
// that multiplexes every connection with poll(). Blocking requests (get,
// wait) are parked on the server until their keys arrive or their deadline
// passes, so a waiting client costs nothing. An optional shared-secret token
// (a job's processes use the job secret, flotilla/common/job_secret.h) guards
// the store: a client presenting another token is refused and told so, and
// the server logs the client's address. Tokens are compared in constant time.
//
// Wire format (private): every message is a 4-byte little-endian length and a
// body; a request body starts with a command byte, a reply body with a status.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "flotilla/comm/store.h"

namespace flotilla::comm {

struct TCPStoreOptions {
  // Default timeout of get()/wait() without an explicit one.
  std::chrono::milliseconds timeout = Store::kDefaultTimeout;
  // How long the constructor retries to reach the server.
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(60);
  // Shared secret; empty = none.
  std::string token;
};

// Bounds the server puts on what clients send. Before a client has
// authenticated, frames are limited to 64 KiB whatever these say.
struct TCPStoreServerOptions {
  std::string token;                      // shared secret; empty = none
  uint32_t max_message_bytes = 1u << 30;  // one request of an authenticated client
  uint32_t max_keys = 1u << 16;           // keys named by one check or wait
};

class TCPStoreServerImpl;

// Serves a store from a background thread until destroyed.
class TCPStoreServer {
 public:
  // Binds host:port (port 0 = any free port; host "" or "0.0.0.0" = every
  // interface) and starts serving. Throws Unavailable naming host:port when
  // it cannot bind.
  static std::unique_ptr<TCPStoreServer> Start(const std::string& host, int port,
                                               const std::string& token = "");
  static std::unique_ptr<TCPStoreServer> Start(const std::string& host, int port,
                                               TCPStoreServerOptions options);
  ~TCPStoreServer();
  TCPStoreServer(const TCPStoreServer&) = delete;
  TCPStoreServer& operator=(const TCPStoreServer&) = delete;

  int port() const;
  // "host:port" as given to Start (with the bound port).
  std::string address() const;
  // Connections open right now (as last counted by the server thread).
  int clients() const;
  // Clients refused so far for a wrong or missing token.
  int64_t refused() const;

 private:
  explicit TCPStoreServer(std::unique_ptr<TCPStoreServerImpl> impl);
  std::unique_ptr<TCPStoreServerImpl> impl_;
};

// A client. Thread-safe: requests from several threads are serialised on one
// connection. A lost connection is re-established on the next request.
class TCPStore : public Store {
 public:
  // Connects with retry until options.connect_timeout, then throws
  // Unavailable naming host:port. A refused token throws Unavailable
  // "store at host:port refused the token" at once.
  TCPStore(const std::string& host, int port, TCPStoreOptions options = {});
  ~TCPStore() override;

  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;
  bool deleteKey(const std::string& key) override;

  std::string address() const;

 private:
  struct Reply;
  Reply Call(const Bytes& request, std::chrono::milliseconds timeout);
  void Connect(std::chrono::milliseconds budget);
  void CloseLocked();

  std::string host_;
  int port_;
  TCPStoreOptions options_;
  std::mutex mu_;
  int fd_ = -1;  // guarded by mu_
};

// Connects a TCPStore to "host:port". Throws InvalidArgument on a malformed
// address, Unavailable as the TCPStore constructor does.
std::shared_ptr<Store> ConnectStore(const std::string& address, TCPStoreOptions options = {});

}  // namespace flotilla::comm
