// Two network namespaces joined by a veth pair, each end shaped to 1 Gbit
// (tbf), for the system benches that measure a job across two "hosts" on
// one machine. Needs root (ip netns, tc). Header-only.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace flotilla::bench {

// Runs a shell command quietly; its exit status.
inline int Sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

// Namespaces `a` and `b` (named from `prefix` and this process's id) with
// addresses ip_a = 10.231.<subnet>.1 and ip_b = 10.231.<subnet>.2; `ok` says
// whether every step worked. Both are removed on destruction.
struct NetnsPair {
  std::string a, b, ip_a, ip_b;
  bool ok = false;

  NetnsPair(const std::string& prefix, int subnet) {
    const std::string tag = std::to_string(getpid());
    const std::string net = "10.231." + std::to_string(subnet) + ".";
    a = prefix + "_a" + tag;
    b = prefix + "_b" + tag;
    ip_a = net + "1";
    ip_b = net + "2";
    const std::string va = prefix + "a" + tag, vb = prefix + "b" + tag;
    const std::string tbf = " root tbf rate 1gbit burst 1mb latency 100ms";
    ok = Sh("ip netns add " + a) == 0 && Sh("ip netns add " + b) == 0 &&
         Sh("ip link add " + va + " netns " + a + " type veth peer name " + vb + " netns " + b) == 0 &&
         Sh("ip -n " + a + " addr add " + ip_a + "/24 dev " + va) == 0 &&
         Sh("ip -n " + b + " addr add " + ip_b + "/24 dev " + vb) == 0 &&
         Sh("ip -n " + a + " link set " + va + " up") == 0 && Sh("ip -n " + b + " link set " + vb + " up") == 0 &&
         Sh("ip -n " + a + " link set lo up") == 0 && Sh("ip -n " + b + " link set lo up") == 0 &&
         Sh("ip netns exec " + a + " tc qdisc add dev " + va + tbf) == 0 &&
         Sh("ip netns exec " + b + " tc qdisc add dev " + vb + tbf) == 0;
  }
  ~NetnsPair() {
    Sh("ip netns del " + a);
    Sh("ip netns del " + b);
  }
  NetnsPair(const NetnsPair&) = delete;
  NetnsPair& operator=(const NetnsPair&) = delete;
};

}  // namespace flotilla::bench
