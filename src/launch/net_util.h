// Small socket helpers for the launcher: this machine's addresses and port
// reservations that cannot be lost to another process.
#pragma once

#include <string>
#include <vector>

namespace flotilla::launch {

// IPv4 addresses of this machine's interfaces (including loopback).
std::vector<std::string> LocalAddresses();

// `host` as a dotted IPv4 address: addresses pass through, names are
// resolved (first IPv4 result). Throws InvalidArgument naming `what` and the
// host when it does not resolve.
std::string ResolveIpv4(const std::string& host, const std::string& what);

// The local IPv4 address this machine uses to reach host:port (no packet is
// sent). Throws Unavailable naming the address when there is no route.
std::string RouteAddressTo(const std::string& host, int port);

// A TCP port held for a child until the launcher exits.
//
// The socket is bound (never listening) with SO_REUSEADDR and SO_REUSEPORT.
// While it is held the kernel hands the port to no one else (bind(0) skips
// it, a plain bind fails), yet the child — which binds its endpoint with
// SO_REUSEADDR or SO_REUSEPORT, as servers do — can take it over. That closes
// the pick-then-bind race of launchers that probe a free port and close it.
// Move-only; closes the socket on destruction.
class PortReservation {
 public:
  // Binds host:port (port 0 = any free port). Throws Unavailable naming the
  // address when the port is taken or the host is not local.
  static PortReservation Reserve(const std::string& host, int port);

  PortReservation() = default;
  PortReservation(PortReservation&& other) noexcept;
  PortReservation& operator=(PortReservation&& other) noexcept;
  PortReservation(const PortReservation&) = delete;
  PortReservation& operator=(const PortReservation&) = delete;
  ~PortReservation();

  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace flotilla::launch
