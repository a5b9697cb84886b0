// TCPStore: a Store served over TCP by one TCPStoreServer (hosted by the
// launcher or by rank 0) and used by any number of TCPStore clients.
//
// The server keeps the keys in memory and answers from one background thread
// that multiplexes every connection with poll(). Blocking requests (get,
// wait) are parked on the server until their keys arrive or their deadline
// passes, so a waiting client costs nothing. An optional shared-secret token
// (a job's processes use the job secret, flotilla/common/job_secret.h) guards
// the store by challenge-response (HMAC-SHA256 over a fresh nonce of the
// server's: the token never crosses the network): a client proving another
// token is refused and told so, and
// the server logs the client's address and counts the refusal in /metrics
// (flotilla_auth_refusals_total{service,reason}). Proofs are compared in
// constant time. The authentication is mutual: the server's answer to the
// hello proves the secret too, and a client holding a token refuses a store
// that cannot (an impostor, or a store started without the secret).
//
// Unauthenticated clients are bounded in bytes, time and number (see
// TCPStoreServerOptions); each one closed before it authenticated is
// counted with its reason: bad_secret, no_challenge, repeated_challenge,
// challenge_only (asked for a challenge, then left), hello_timeout,
// oversized_frame, unread_replies, bad_request, unauthenticated_limit,
// plaintext_client, tls_handshake.
//
// Optional TLS (OpenSSL on the store's sockets): a store with TLS files
// serves TLS only; clients check its certificate; mutual TLS with a CA.
//
// Wire format (private): every message is a 4-byte little-endian length and a
// body; a request body starts with a command byte, a reply body with a status.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "flotilla/comm/store.h"
#include "flotilla/common/tls_files.h"

namespace flotilla::comm {

struct TCPStoreOptions {
  // Default timeout of get()/wait() without an explicit one.
  std::chrono::milliseconds timeout = Store::kDefaultTimeout;
  // How long the constructor retries to reach the server.
  std::chrono::milliseconds connect_timeout = std::chrono::seconds(60);
  // Shared secret; empty = none.
  std::string token;
  // TLS (flotilla/common/tls_files.h): the server's certificate is checked
  // against tls.ca and the address dialled; cert/key are presented when
  // given. Default: plaintext.
  TlsFiles tls;
};

// Bounds the server puts on what clients send. Before a client has
// authenticated, its frames are limited to 256 bytes and its unread replies
// to 256 bytes whatever these say; it gets one challenge.
struct TCPStoreServerOptions {
  std::string token;                      // shared secret; empty = none
  // What the store serves, as refusals are counted in /metrics
  // (flotilla_auth_refusals_total{service}): "store" or "elastic".
  std::string service = "store";
  // TLS (flotilla/common/tls_files.h): serves TLS only, with cert/key, and
  // demands a client certificate signed by tls.ca when one is given. A
  // plaintext client is told so and refused. Default: plaintext.
  TlsFiles tls;
  uint32_t max_message_bytes = 1u << 30;  // one request of an authenticated client
  uint32_t max_keys = 1u << 16;           // keys named by one check or wait
  // A client that has not authenticated this long after it connected is
  // closed (counted as reason "hello_timeout").
  std::chrono::milliseconds hello_timeout = std::chrono::seconds(5);
  // Clients not yet authenticated at once; past it the oldest is closed for
  // each new one (reason "unauthenticated_limit"), and accepting slows down
  // while they are closed before they had a fair chance.
  int max_unauthenticated = 128;
};

class TCPStoreServerImpl;
namespace tls {
class Context;
class Session;
}  // namespace tls

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
  // Clients refused or closed so far before they authenticated (every
  // reason).
  int64_t refused() const;

 private:
  explicit TCPStoreServer(std::unique_ptr<TCPStoreServerImpl> impl);
  std::unique_ptr<TCPStoreServerImpl> impl_;
};

// A client. Thread-safe: requests from several threads are serialised on one
// connection. A lost connection is re-established on the next request.
class TCPStore : public Store {
 public:
  // Connects with retry until options.connect_timeout (also when the store
  // closes the connection before answering, as a crowded one may), then
  // throws Unavailable naming host:port. A refused token throws Unavailable
  // "store at host:port refused the token" at once; with a token, a store
  // that does not prove the same secret throws Unavailable "store at
  // host:port did not prove the job secret" at once.
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
  // Reads one reply's body (after its length) before `deadline`, as
  // net::RecvAll: 1 read, 0 lost (or a length out of bounds), -1 too late.
  int RecvReply(std::chrono::steady_clock::time_point deadline, Bytes* body,
                uint32_t max_bytes = UINT32_MAX);
  // The challenge-response on a fresh connection: true when authenticated,
  // false when the store closed the connection first; throws when refused.
  bool AuthenticateLocked(std::chrono::steady_clock::time_point deadline);
  void CloseLocked();

  // One connection's bytes, through TLS when the options ask for it.
  bool SendLocked(const void* data, size_t n);
  int RecvLocked(void* data, size_t n, std::chrono::steady_clock::time_point deadline);
  // Runs the TLS handshake on fd_; throws Unavailable naming the store.
  void HandshakeLocked(std::chrono::milliseconds budget);

  std::string host_;
  int port_;
  TCPStoreOptions options_;
  std::shared_ptr<tls::Context> tls_context_;  // null: plaintext
  std::mutex mu_;
  int fd_ = -1;                          // guarded by mu_
  std::unique_ptr<tls::Session> tls_;    // guarded by mu_; on fd_ with TLS
};

// Connects a TCPStore to "host:port". Throws InvalidArgument on a malformed
// address, Unavailable as the TCPStore constructor does.
std::shared_ptr<Store> ConnectStore(const std::string& address, TCPStoreOptions options = {});

}  // namespace flotilla::comm
