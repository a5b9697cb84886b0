#include "comm/store/socket_util.h"

#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "flotilla/common/enforce.h"

namespace flotilla::comm::net {
namespace {

struct AddrInfo {
  addrinfo* head = nullptr;
  ~AddrInfo() {
    if (head) freeaddrinfo(head);
  }
};

int Resolve(const std::string& host, int port, bool passive, AddrInfo* out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  const char* node = (host.empty() || host == "0.0.0.0") && passive ? nullptr : host.c_str();
  if (passive && node == nullptr) hints.ai_family = AF_INET;
  return getaddrinfo(node, std::to_string(port).c_str(), &hints, &out->head);
}

}  // namespace

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Fd Listen(const std::string& host, int port) {
  AddrInfo ai;
  int rc = Resolve(host, port, true, &ai);
  FLOTILLA_CHECK(rc == 0, Unavailable, "cannot resolve store address ", host, ":", port, ": ",
                 gai_strerror(rc));
  std::string error = "no address";
  for (addrinfo* a = ai.head; a; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd) continue;
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd.get(), 1024) == 0) {
      return fd;
    }
    error = std::strerror(errno);
  }
  FLOTILLA_THROW(Unavailable, "cannot listen on ", host, ":", port, ": ", error);
}

int LocalPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

Fd TryConnect(const std::string& host, int port, std::string* error) {
  AddrInfo ai;
  int rc = Resolve(host, port, false, &ai);
  if (rc != 0) {
    *error = gai_strerror(rc);
    return Fd();
  }
  for (addrinfo* a = ai.head; a; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd) continue;
    if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) == 0) {
      SetNoDelay(fd.get());
      return fd;
    }
    *error = std::strerror(errno);
  }
  return Fd();
}

std::string PeerName(const sockaddr_storage& addr) {
  char ip[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    inet_ntop(AF_INET, &a.sin_addr, ip, sizeof(ip));
    port = ntohs(a.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    inet_ntop(AF_INET6, &a.sin6_addr, ip, sizeof(ip));
    port = ntohs(a.sin6_port);
  }
  return std::string(ip) + ":" + std::to_string(port);
}

void SetNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

bool SendAll(int fd, const void* data, size_t n) {
  auto* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

int RecvAll(int fd, void* data, size_t n, std::chrono::steady_clock::time_point deadline) {
  auto* p = static_cast<char*>(data);
  while (n > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return -1;
    pollfd pfd{fd, POLLIN, 0};
    int rc = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) continue;
    ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0) return 0;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return 1;
}

}  // namespace flotilla::comm::net
