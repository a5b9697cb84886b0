#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "flotilla/common/error.h"
#include "launch/net_util.h"
#include "launch/node_plan.h"
#include "launch/options_test_util.h"

namespace flotilla::launch {
namespace {

int BindLoopback(int port, bool reuse_addr) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  if (reuse_addr) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// The reservation keeps strangers off the port but lets the child take it.
TEST(PortReservation, HeldAgainstOthersHandedToTheChild) {
  PortReservation held = PortReservation::Reserve("127.0.0.1", 0);
  ASSERT_GT(held.port(), 0);
  EXPECT_EQ(BindLoopback(held.port(), /*reuse_addr=*/false), -1) << "a plain bind must fail";
  int child = BindLoopback(held.port(), /*reuse_addr=*/true);
  ASSERT_GE(child, 0) << "the child's SO_REUSEADDR bind must succeed";
  ASSERT_EQ(listen(child, 4), 0);
  // Once the child listens, the port cannot be reserved again.
  EXPECT_THROW(PortReservation::Reserve("127.0.0.1", held.port()), Unavailable);
  close(child);
  EXPECT_THROW(PortReservation::Reserve("not-an-ip", 0), InvalidArgument);
}

TEST(LocalAddresses, IncludeLoopback) {
  auto addrs = LocalAddresses();
  EXPECT_NE(std::find(addrs.begin(), addrs.end(), "127.0.0.1"), addrs.end());
}

TEST(ResolveIpv4, AddressesPassNamesResolve) {
  EXPECT_EQ(ResolveIpv4("10.1.2.3", "--ips"), "10.1.2.3");
  EXPECT_EQ(ResolveIpv4("localhost", "--ips"), "127.0.0.1");
  EXPECT_THROW(ResolveIpv4("no-such-host.invalid", "--ips"), InvalidArgument);
  LaunchOptions o = WithCommand();
  o.ips = "localhost";
  EXPECT_EQ(PlanNode(o, RunMode::kCollective).local[0].host, "127.0.0.1");
}

}  // namespace
}  // namespace flotilla::launch
