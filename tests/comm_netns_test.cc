// Two hosts made of network namespaces joined by a veth pair, two ranks on
// each: gloo across all four ranks, and hierarchical (shm inside a host,
// gloo between the hosts). Needs root; skips otherwise. The namespaces are
// removed on every path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "comm_test_util.h"

namespace flotilla::comm {
namespace {

using namespace std::chrono_literals;

int Sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

// ns "<a>" holds 10.233.0.1, ns "<b>" holds 10.233.0.2.
class TwoHosts : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
    std::string tag = std::to_string(getpid());
    a_ = "flc_a" + tag;
    b_ = "flc_b" + tag;
    bool ok = Sh("ip netns add " + a_) == 0 && Sh("ip netns add " + b_) == 0 &&
              Sh("ip link add fca" + tag + " netns " + a_ + " type veth peer name fcb" + tag +
                 " netns " + b_) == 0 &&
              Sh("ip -n " + a_ + " addr add 10.233.0.1/24 dev fca" + tag) == 0 &&
              Sh("ip -n " + b_ + " addr add 10.233.0.2/24 dev fcb" + tag) == 0 &&
              Sh("ip -n " + a_ + " link set fca" + tag + " up") == 0 &&
              Sh("ip -n " + b_ + " link set fcb" + tag + " up") == 0 &&
              Sh("ip -n " + a_ + " link set lo up") == 0 && Sh("ip -n " + b_ + " link set lo up") == 0;
    if (!ok) GTEST_SKIP() << "cannot create network namespaces / veth (ip netns failed)";
  }
  void TearDown() override {
    procs_.clear();  // ends any still running
    if (!a_.empty()) Sh("ip netns del " + a_);
    if (!b_.empty()) Sh("ip netns del " + b_);
  }

  void RunFourRanks(const std::string& backend) {
    const std::string store = "10.233.0.1:29611";
    for (int r = 0; r < 4; ++r) {
      const bool host_a = r < 2;
      const std::string ip = host_a ? "10.233.0.1" : "10.233.0.2";
      std::vector<std::string> argv{"ip", "netns", "exec", host_a ? a_ : b_, RankHelperPath(),
                                    "--store", store, "--rank", std::to_string(r), "--size", "4",
                                    "--backend", backend, "--host-id", ip, "--gloo-host", ip,
                                    "--timeout-ms", "60000"};
      if (r == 0) argv.push_back("--host-store");
      procs_.push_back(StartRank(argv, backend + " rank " + std::to_string(r)));
    }
    for (int r = 0; r < 4; ++r) {
      const int code = procs_[r].Finish(180s);
      std::string out = procs_[r].Stdout();
      EXPECT_EQ(code, 0) << backend << " rank " << r << ": " << out;
      EXPECT_NE(out.find("OK rank " + std::to_string(r) + " backend " + backend),
                std::string::npos) << out;
    }
    procs_.clear();
  }

  std::string a_, b_;
  std::vector<testing::Process> procs_;
};

TEST_F(TwoHosts, GlooAcrossFourRanks) { RunFourRanks("gloo"); }

TEST_F(TwoHosts, HierarchicalShmInsideGlooBetween) { RunFourRanks("hierarchical"); }

}  // namespace
}  // namespace flotilla::comm
