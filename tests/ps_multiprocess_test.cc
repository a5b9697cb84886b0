// Parameter servers as separate processes (started here, ended here by pid).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "flotilla/common/error.h"
#include "flotilla/common/file_util.h"
#include "flotilla/ps/client.h"
#include "flotilla/testing/process.h"

namespace flotilla::ps {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A server process (ps_test_server); the destructor kills it if still running.
class ServerProcess {
 public:
  ServerProcess(int index, int num_servers, int num_trainers, const std::string& mode,
                const std::string& dir)
      : port_file_(dir + "/port." + std::to_string(index)),
        process_({{std::string(std::getenv("FLOTILLA_BUILD_DIR")) + "/tests/ps_test_server",
                   "--index", std::to_string(index), "--num_servers", std::to_string(num_servers),
                   "--num_trainers", std::to_string(num_trainers), "--mode", mode, "--port_file",
                   port_file_},
                  {},
                  "server " + std::to_string(index)}) {}
  // Waits for the port file; "" when the process died or 20 s passed.
  std::string Endpoint() {
    for (auto end = Clock::now() + 20s; Clock::now() < end; std::this_thread::sleep_for(20ms)) {
      if (FileExists(port_file_)) return "127.0.0.1:" + ReadFile(port_file_);
      if (process_.Wait(0ms)) return "";
    }
    return "";
  }
  // Waits up to `limit` for the exit; returns the exit code (128 + signal
  // when a signal ended it), or -1 on timeout.
  int WaitExit(std::chrono::seconds limit) { return process_.Wait(limit).value_or(-1); }
  void Kill() {
    process_.Kill(SIGKILL);
    process_.Finish(10s);
  }

 private:
  std::string port_file_;
  testing::Process process_;
};

class PsMultiProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(std::getenv("FLOTILLA_BUILD_DIR"), nullptr)
        << "FLOTILLA_BUILD_DIR is unset: run through ctest, which points it at the build tree";
    dir_ = ::testing::TempDir() + "flotilla_ps_mp_" + std::to_string(::getpid());
    RemoveAll(dir_);
    MakeDirs(dir_);
  }
  void TearDown() override { RemoveAll(dir_); }
  std::vector<std::string> StartServers(int n, int trainers, const std::string& mode) {
    std::vector<std::string> eps;
    for (int i = 0; i < n; ++i) servers_.push_back(std::make_unique<ServerProcess>(i, n, trainers, mode, dir_));
    for (auto& s : servers_) eps.push_back(s->Endpoint());
    return eps;
  }
  std::string dir_;
  std::vector<std::unique_ptr<ServerProcess>> servers_;
};

TEST_F(PsMultiProcess, SyncTrainersThenServersExitZeroWhenAllFinished) {
  auto eps = StartServers(2, 2, "sync");
  for (const auto& ep : eps) ASSERT_FALSE(ep.empty()) << "a server did not start";
  std::vector<std::vector<float>> got(2);
  auto trainer = [&](int id) {
    PsClient client(eps, id, 2);
    Tensor w(DType::kFloat32, {20000});
    for (int step = 0; step < 3; ++step) {
      Tensor g(DType::kFloat32, {20000});
      float* p = g.mutable_data<float>();
      for (int i = 0; i < 20000; ++i) p[i] = id == 0 ? 1.0f : 3.0f;  // mean 2
      client.PushDense("w", g);
      client.PushSparse("emb", std::vector<int64_t>{id, 5}, Tensor::FromVector(std::vector<float>(8, 1.0f), {2, 4}));
      client.Barrier();
      client.PullDense("w", &w);
      client.Barrier();
    }
    got[id] = {w.data<float>()[0], w.data<float>()[19999]};
    client.Finish();
  };
  std::thread t0(trainer, 0), t1(trainer, 1);
  t0.join();
  t1.join();
  // 1 - 3 steps * 0.1 * mean 2.
  EXPECT_NEAR(got[0][0], 0.4f, 1e-6);
  EXPECT_NEAR(got[1][1], 0.4f, 1e-6);
  for (auto& s : servers_) EXPECT_EQ(s->WaitExit(20s), 0);
}

TEST_F(PsMultiProcess, KilledServerMakesTrainersFailWithinTheDeadlineNamingIt) {
  auto eps = StartServers(2, 1, "async");
  for (const auto& ep : eps) ASSERT_FALSE(ep.empty()) << "a server did not start";
  PsClientOptions o;
  o.retry_timeout = 3s;
  o.rpc_timeout = 10s;
  PsClient client(eps, 0, 1, o);
  Tensor w(DType::kFloat32, {20000});
  client.PullDense("w", &w);  // both servers hold a block of w
  servers_[1]->Kill();
  const auto start = Clock::now();
  try {
    client.PullDense("w", &w);
    FAIL() << "pull from a killed server succeeded";
  } catch (const Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find(eps[1]), std::string::npos) << e.what();
  }
  EXPECT_LT(Clock::now() - start, 40s);
  // A barrier does not hang either.
  EXPECT_THROW(client.Barrier(), Unavailable);
}

}  // namespace
}  // namespace flotilla::ps
