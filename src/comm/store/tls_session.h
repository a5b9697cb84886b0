// TLS for the TCPStore: OpenSSL over the store's own sockets, from a job's
// TLS files (flotilla/common/tls_files.h). Private to the store.
//
// The server's sockets are non-blocking: Handshake/Read/Write return what
// the session waits for, and the server polls for it. The client's socket is
// blocking; SendAll/RecvAll mirror net::SendAll/net::RecvAll.
#pragma once

#include <openssl/ssl.h>

#include <chrono>
#include <memory>
#include <string>

#include "flotilla/common/tls_files.h"

namespace flotilla::comm::tls {

// An SSL_CTX for every connection of one server or one client.
class Context {
 public:
  // Presents cert/key (both required: throws InvalidArgument naming
  // FLOTILLA_TLS_CERT/KEY otherwise); demands a client certificate the CA
  // signed when a CA is given (mutual TLS).
  static std::shared_ptr<Context> ForServer(const TlsFiles& files);
  // Checks the server's certificate against the CA (the system's roots
  // without one) and the address dialled; presents cert/key when given.
  static std::shared_ptr<Context> ForClient(const TlsFiles& files);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  SSL_CTX* get() const { return ctx_; }

 private:
  explicit Context(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

// What a non-blocking step needs before it can go on.
enum class Want { kNothing, kRead, kWrite, kFailed };

// One TLS connection over a socket it does not own (the caller closes it
// after the session is gone).
class Session {
 public:
  // `host`: on a client, the address dialled (checked against the server's
  // certificate); "" on a server.
  Session(std::shared_ptr<Context> ctx, int fd, bool server, const std::string& host);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  bool established() const { return established_; }
  // One step of the handshake: kNothing once established.
  Want Handshake();
  // Up to n bytes: > 0 read; 0 closed or failed (see error()); -1 with
  // *want set to what it waits for.
  long Read(void* data, size_t n, Want* want);
  // As Read, for writing.
  long Write(const void* data, size_t n, Want* want);
  // The last failure, for messages ("" when none).
  const std::string& error() const { return error_; }

  // Blocking sockets (the client): all of `data`; false when the peer is gone.
  bool SendAll(const void* data, size_t n);
  // Exactly n bytes before `deadline`: 1 ok, 0 closed or failed, -1 too late.
  int RecvAll(void* data, size_t n, std::chrono::steady_clock::time_point deadline);

 private:
  Want Classify(int rc);

  std::shared_ptr<Context> ctx_;
  SSL* ssl_ = nullptr;
  int fd_;
  bool established_ = false;
  std::string error_;
};

// True when `first` can open a TLS connection (a handshake record); the
// store's plaintext frames start with a length that never looks like one.
inline bool LooksLikeTls(unsigned char first) { return first == 0x16; }

}  // namespace flotilla::comm::tls
