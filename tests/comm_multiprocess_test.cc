// Ranks as separate processes on loopback: every backend end to end, a rank
// killed mid-allreduce, a rank that never arrives; a killed process counts as
// dead from the moment its peers see its connections close.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "comm/rendezvous.h"
#include "comm_test_util.h"
#include "flotilla/comm/tcp_store.h"

namespace flotilla::comm {
namespace {

using namespace std::chrono_literals;

class MultiProcess : public ::testing::Test {
 protected:
  void SetUp() override { server_ = TCPStoreServer::Start("127.0.0.1", 0); }
  void TearDown() override { procs_.clear(); }  // ends any still running

  // Starts ranks [0, count) of a group of `size`; host ids by rank if given.
  void StartRanks(int count, int size, const std::string& backend, const std::string& mode,
                  int timeout_ms, std::vector<std::string> hosts = {}) {
    for (int r = 0; r < count; ++r) {
      std::vector<std::string> argv{RankHelperPath(), "--store", server_->address(),
                                    "--rank", std::to_string(r), "--size", std::to_string(size),
                                    "--backend", backend, "--mode", mode, "--timeout-ms",
                                    std::to_string(timeout_ms)};
      if (!hosts.empty()) argv.insert(argv.end(), {"--host-id", hosts[r]});
      procs_.push_back(StartRank(argv, backend + " rank " + std::to_string(r)));
    }
  }
  void ExpectAllSucceed(const std::string& backend) {
    for (size_t r = 0; r < procs_.size(); ++r) {
      const int code = procs_[r].Finish(120s);
      std::string out = procs_[r].Stdout();
      EXPECT_EQ(code, 0) << backend << " rank " << r << ": " << out;
      EXPECT_NE(out.find("OK rank"), std::string::npos) << out;
    }
  }

  std::unique_ptr<TCPStoreServer> server_;
  std::vector<testing::Process> procs_;
};

TEST_F(MultiProcess, ShmFourRanks) {
  StartRanks(4, 4, "auto", "check", 60000);
  ExpectAllSucceed("shm");
  EXPECT_NE(procs_[0].Stdout().find("backend shm"), std::string::npos);
}

TEST_F(MultiProcess, GlooFourRanks) {
  StartRanks(4, 4, "gloo", "check", 60000);
  ExpectAllSucceed("gloo");
}

TEST_F(MultiProcess, HierarchicalOverFakeHosts) {
  StartRanks(4, 4, "auto", "check", 60000, {"hostA", "hostA", "hostB", "hostB"});
  ExpectAllSucceed("hierarchical");
  EXPECT_NE(procs_[3].Stdout().find("backend hierarchical"), std::string::npos);
}

// SIGKILL one rank in the middle of a stream of allreduces: the others must
// fail well before their (long) timeout, naming the dead rank.
void KillRankAndExpectNamed(std::vector<testing::Process>& procs, TCPStoreServer& server,
                            const std::string& backend, std::chrono::seconds within) {
  auto store = ConnectStore(server.address());
  std::vector<std::string> ready;
  for (size_t r = 0; r < procs.size(); ++r) ready.push_back("ready/" + std::to_string(r));
  store->wait(ready, 60s);
  std::this_thread::sleep_for(200ms);
  procs[1].Kill(SIGKILL);
  procs[1].Finish(10s);
  auto killed_at = std::chrono::steady_clock::now();
  for (size_t r = 0; r < procs.size(); ++r) {
    if (r == 1) continue;
    const int code = procs[r].Finish(60s);
    std::string out = procs[r].Stdout();
    EXPECT_EQ(code, 3) << out;
    EXPECT_NE(out.find("ERROR"), std::string::npos) << out;
    EXPECT_NE(out.find("rank 1"), std::string::npos) << backend << ": " << out;
  }
  // The timeout is 5 minutes: dead peers are detected, not waited out.
  EXPECT_LT(std::chrono::steady_clock::now() - killed_at, within) << backend;
}

TEST_F(MultiProcess, ShmKilledRankIsNamedFast) {
  StartRanks(3, 3, "shm", "loop", 300000);
  // A parked waiter checks its peers every 10 ms (12-25 ms measured); the
  // bound leaves room for a loaded machine.
  KillRankAndExpectNamed(procs_, *server_, "shm", 5s);
}

TEST_F(MultiProcess, GlooKilledRankIsNamedFast) {
  StartRanks(2, 2, "gloo", "loop", 300000);
  KillRankAndExpectNamed(procs_, *server_, "gloo", 60s);
}

TEST_F(MultiProcess, MissingRankIsNamedAtTimeout) {
  StartRanks(2, 3, "auto", "check", 1500);
  for (auto& p : procs_) {
    const int code = p.Finish(60s);
    std::string out = p.Stdout();
    EXPECT_EQ(code, 3) << out;
    EXPECT_NE(out.find("DeadlineExceeded"), std::string::npos) << out;
    EXPECT_NE(out.find("ranks [2]"), std::string::npos) << out;
  }
}

// The error naming a dead peer is written when a connection to it closes. A
// killed process closes its files before it turns zombie, so it must count
// as dead in that window too (a few percent of kills land there).
TEST(ProcessIsDead, KilledProcessIsDeadOnceItsConnectionsClose) {
  for (int i = 0; i < 300; ++i) {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(sv[0]);
      std::thread idle([] {  // a second thread, as in a rank
        for (;;) pause();
      });
      char c = 1;
      (void)!write(sv[1], &c, 1);
      for (;;) pause();
    }
    close(sv[1]);
    char c = 0;
    ASSERT_EQ(read(sv[0], &c, 1), 1);
    EXPECT_FALSE(ProcessIsDead(pid)) << "a running process";
    kill(pid, SIGKILL);
    EXPECT_EQ(read(sv[0], &c, 1), 0);  // the child's end closed
    const bool dead = ProcessIsDead(pid);
    close(sv[0]);
    waitpid(pid, nullptr, 0);
    ASSERT_TRUE(dead) << "kill " << i << ": connection closed, process not reported dead";
    EXPECT_TRUE(ProcessIsDead(pid)) << "a reaped process";
  }
}

}  // namespace
}  // namespace flotilla::comm
