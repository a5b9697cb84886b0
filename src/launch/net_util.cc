#include "launch/net_util.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "flotilla/common/enforce.h"

namespace flotilla::launch {

std::vector<std::string> LocalAddresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN];
    auto* sin = reinterpret_cast<sockaddr_in*>(it->ifa_addr);
    if (inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf))) out.emplace_back(buf);
  }
  freeifaddrs(list);
  return out;
}

std::string ResolveIpv4(const std::string& host, const std::string& what) {
  in_addr probe{};
  if (inet_pton(AF_INET, host.c_str(), &probe) == 1) return host;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  FLOTILLA_CHECK(rc == 0 && found != nullptr, InvalidArgument, what, ": host '", host,
                 "' does not resolve to an IPv4 address (", gai_strerror(rc), ")");
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, buf, sizeof(buf));
  freeaddrinfo(found);
  return buf;
}

namespace {

sockaddr_in ParseIpv4(const std::string& host, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string ip = host == "localhost" ? "127.0.0.1" : host;
  if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
    FLOTILLA_THROW(InvalidArgument, "'", host, "' is not an IPv4 address (the launcher "
                   "needs numeric node addresses in --ips/--host/--servers/--workers)");
  }
  return addr;
}

}  // namespace

std::string RouteAddressTo(const std::string& host, int port) {
  sockaddr_in peer = ParseIpv4(host, port);
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  FLOTILLA_CHECK(fd >= 0, Unavailable, "socket(): ", std::strerror(errno));
  // Connecting a UDP socket only picks the route and the source address.
  if (connect(fd, reinterpret_cast<sockaddr*>(&peer), sizeof(peer)) != 0) {
    int err = errno;
    close(fd);
    FLOTILLA_THROW(Unavailable, "no route from this machine to ", host, ":", port, ": ",
                   std::strerror(err));
  }
  sockaddr_in self{};
  socklen_t len = sizeof(self);
  getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len);
  close(fd);
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &self.sin_addr, buf, sizeof(buf));
  return buf;
}

PortReservation PortReservation::Reserve(const std::string& host, int port) {
  sockaddr_in addr = ParseIpv4(host, port);
  PortReservation r;
  r.fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  FLOTILLA_CHECK(r.fd_ >= 0, Unavailable, "socket(): ", std::strerror(errno));
  int one = 1;
  setsockopt(r.fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  setsockopt(r.fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  if (bind(r.fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    FLOTILLA_THROW(Unavailable, "cannot reserve port ", port, " on ", host, ": ",
                   std::strerror(errno),
                   port == 0 ? "" : " (another process is listening there; pick another "
                                    "--started_port)");
  }
  socklen_t len = sizeof(addr);
  getsockname(r.fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  r.port_ = ntohs(addr.sin_port);
  return r;
}

PortReservation::PortReservation(PortReservation&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(other.port_) {}

PortReservation& PortReservation::operator=(PortReservation&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    port_ = other.port_;
  }
  return *this;
}

PortReservation::~PortReservation() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace flotilla::launch
