// Small POSIX socket helpers for the TCPStore (private).
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <string>

#include "flotilla/comm/store.h"

namespace flotilla::comm::net {

// Owns a file descriptor; closes it on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  ~Fd();
  int get() const { return fd_; }
  int release() { int f = fd_; fd_ = -1; return f; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Binds and listens on host:port ("" / "0.0.0.0" = any). Throws Unavailable.
Fd Listen(const std::string& host, int port);
int LocalPort(int fd);
// One connection attempt; returns an invalid Fd and sets `error` on failure.
Fd TryConnect(const std::string& host, int port, std::string* error);
void SetNoDelay(int fd);
// "ip:port" of an address from accept(); "?" for a family other than IPv4/6.
std::string PeerName(const sockaddr_storage& addr);
void SetNonBlocking(int fd);
// Blocking send of all bytes; false when the peer is gone.
bool SendAll(int fd, const void* data, size_t n);
// Reads exactly n bytes before `deadline`. Returns 1 ok, 0 peer closed / error,
// -1 deadline passed.
int RecvAll(int fd, void* data, size_t n, std::chrono::steady_clock::time_point deadline);

}  // namespace flotilla::comm::net
