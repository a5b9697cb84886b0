// Elastic jobs end to end: launchers on loopback with distinct --host
// addresses (127.0.0.1-3) meet in a real etcd and train train_with_fleet
// with checkpoints. A launcher SIGKILLed mid-training makes the others
// restart in a smaller world from the last checkpoint; a launcher started
// again scales the job back out; the finished job leaves no keys in etcd.
// With --np N the survivors wait for a replacement. Prints the recovery time
// (loss → first step of the new world) as a JSON line.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "elastic_test_util.h"
#include "flotilla/io/checkpoint_manager.h"
#include "launch/elastic/etcd_client.h"
#include "launch_test_util.h"

namespace flotilla::elastic_test {
namespace {

using Clock = std::chrono::steady_clock;
using launch_test::Child;
using launch_test::TempDir;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kTtlSeconds = 3;

struct Resumed {
  int64_t step = 0;
  double cost = 0;
  int ranks = 0;
};

bool WaitFor(const std::function<bool()>& done, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

// One elastic job: its launchers by host, its checkpoint directory, its keys.
class ElasticJob {
 public:
  ElasticJob(const EtcdServer& etcd, const TempDir& tmp, std::string job, std::string np, int steps)
      : etcd_(etcd), tmp_(tmp), job_(std::move(job)), np_(std::move(np)), steps_(steps) {}

  ~ElasticJob() {
    launchers_.clear();  // SIGKILLs any launcher still running
    // Their trainers die with them (PR_SET_PDEATHSIG); make sure, by pid.
    auto left = ProcessesMentioning(tmp_.path());
    if (!launch_test::WaitGone(left, seconds(5))) launch_test::KillAll(left);
  }

  void Start(const std::string& host) {
    const std::string n = std::to_string(starts_++);
    launchers_[host] = std::make_unique<Child>(
        std::vector<std::string>{launch_test::FlotillaBin(), "launch", "--log_dir",
                                 tmp_ / ("log." + host + "." + n), "--grace_period", "1",
                                 "--elastic_server", "etcd://" + etcd_.endpoint(), "--job_id", job_,
                                 "--np", np_, "--host", host,
                                 launch_test::Bin("train_with_fleet"), "--steps",
                                 std::to_string(steps_), "--hidden", "64", "--batch_size", "256",
                                 "--lr", "0.05", "--labels", "sum", "--fetch_frequency", "1",
                                 "--checkpoint_dir", checkpoint_dir(), "--checkpoint_every", "10"},
        tmp_.path(),
        std::vector<std::string>{"FLOTILLA_ELASTIC_TTL=" + std::to_string(kTtlSeconds),
                                 "FLOTILLA_ELASTIC_TIMEOUT=5"});
  }

  Child& launcher(const std::string& host) { return *launchers_.at(host); }
  std::string checkpoint_dir() const { return tmp_ / "ckpt"; }
  int64_t LatestCheckpoint() const {
    return io::CheckpointManager(checkpoint_dir()).LatestStep().value_or(-1);
  }

  // Every "resumed at step" line rank 0 printed (relayed by whichever
  // launcher was node 0), in no particular order.
  std::vector<Resumed> ResumedLines() const {
    static const std::regex line(R"(resumed at step (\d+) cost=([0-9.eE+-]+) ranks=(\d+))");
    std::vector<Resumed> out;
    for (const auto& [host, child] : launchers_) {
      const std::string text = child->Stdout();
      for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it) {
        out.push_back({std::stoll((*it)[1]), std::stod((*it)[2]), std::stoi((*it)[3])});
      }
    }
    return out;
  }
  std::optional<Resumed> ResumedWith(int ranks, int64_t after_step = -1) const {
    for (const auto& r : ResumedLines()) {
      if (r.ranks == ranks && r.step > after_step) return r;
    }
    return std::nullopt;
  }
  // The host of node 0 in world 0 (it hosts that world's store).
  std::string FirstWorldNodeZero() const {
    static const std::regex line(R"(world 0 with \d+ node\(s\) \[([0-9.]+))");
    for (const auto& [host, child] : launchers_) {
      std::smatch m;
      const std::string text = child->Stderr();
      if (std::regex_search(text, m, line)) return m[1];
    }
    return "";
  }

  // The loss of step 0 (the untrained model).
  double FirstLoss() const {
    static const std::regex line(R"(step0 cost=([0-9.eE+-]+))");
    for (const auto& [host, child] : launchers_) {
      std::smatch m;
      const std::string text = child->Stdout();
      if (std::regex_search(text, m, line)) return std::stod(m[1]);
    }
    return -1;
  }

  void ExpectAllSucceed(milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (auto& [host, child] : launchers_) {
      auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      EXPECT_EQ(child->WaitCode(std::max(left, milliseconds(1))), 0)
          << host << " stderr:\n" << child->Stderr().substr(0, 20000);
    }
  }

  size_t KeysInEtcd() const {
    launch::EtcdClient etcd(launch::EtcdOptions{launch::ParseEtcdEndpoints(etcd_.endpoint())});
    return etcd.GetPrefix("/flotilla/" + job_ + "/").kvs.size();
  }

 private:
  const EtcdServer& etcd_;
  const TempDir& tmp_;
  std::string job_, np_;
  int steps_;
  int starts_ = 0;
  std::map<std::string, std::unique_ptr<Child>> launchers_;
};

class ElasticLaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_BUILT(launch_test::FlotillaBin());
    ASSERT_BUILT(launch_test::Bin("train_with_fleet"));
    etcd_ = EtcdServer::Start();
    if (!etcd_) GTEST_SKIP() << kEtcdBinary << " is not installed (Debian package etcd-server)";
  }
  std::unique_ptr<EtcdServer> etcd_;
  TempDir tmp_;
};

TEST_F(ElasticLaunchTest, LostNodeShrinksTheWorldAndAReturningOneScalesItOut) {
  ElasticJob job(*etcd_, tmp_, "scale", "2:3", 1500);
  for (const char* host : {"127.0.0.1", "127.0.0.2", "127.0.0.3"}) job.Start(host);
  ASSERT_TRUE(WaitFor([&] { return job.LatestCheckpoint() >= 60; }, seconds(60)))
      << job.launcher("127.0.0.1").Stderr();
  const int64_t saved_before_loss = job.LatestCheckpoint();
  // The hardest node to lose: node 0, whose launcher hosts the world's store.
  const std::string lost = job.FirstWorldNodeZero();
  ASSERT_FALSE(lost.empty());
  const double untrained_loss = job.FirstLoss();  // before node 0's output goes
  ASSERT_GT(untrained_loss, 0);

  const auto lost_at = Clock::now();
  job.launcher(lost).Kill(SIGKILL);
  std::optional<Resumed> two;
  ASSERT_TRUE(WaitFor([&] { return (two = job.ResumedWith(2)).has_value(); }, seconds(30)))
      << job.launcher("127.0.0.1").Stderr();
  const double recovery = std::chrono::duration<double>(Clock::now() - lost_at).count();
  std::cout << nlohmann::json{{"bench", "elastic_recovery"}, {"np", "2:3"},
                              {"lease_ttl_s", kTtlSeconds}, {"recovery_s", recovery},
                              {"lost", lost + " (node 0)"},
                              {"checkpoint_before_loss", saved_before_loss},
                              {"resumed_step", two->step}, {"world", 2}}.dump()
            << std::endl;
  EXPECT_LT(recovery, 10.0);
  EXPECT_GE(two->step, saved_before_loss);  // the step counter continues
  EXPECT_LT(two->cost, untrained_loss - 0.08) << "the loss jumped back to the untrained model's";

  job.Start(lost);  // back again: the job scales out to 3
  std::optional<Resumed> three;
  ASSERT_TRUE(WaitFor([&] { return (three = job.ResumedWith(3, two->step - 1)).has_value(); },
                      seconds(30)))
      << job.launcher(lost).Stderr();
  EXPECT_GE(three->step, two->step);
  EXPECT_LT(three->cost, untrained_loss - 0.08);

  job.ExpectAllSucceed(seconds(90));
  EXPECT_EQ(job.KeysInEtcd(), 0u) << "the finished job left keys in etcd";
  EXPECT_EQ(job.LatestCheckpoint(), 1490);  // the last one before the end
  EXPECT_TRUE(launch_test::WaitGone(ProcessesMentioning(tmp_.path()), seconds(5)))
      << "a launcher or trainer outlived the job";
}

TEST_F(ElasticLaunchTest, FixedSizeJobWaitsForAReplacement) {
  ElasticJob job(*etcd_, tmp_, "fixed", "2", 1000);
  for (const char* host : {"127.0.0.1", "127.0.0.2"}) job.Start(host);
  ASSERT_TRUE(WaitFor([&] { return job.LatestCheckpoint() >= 30; }, seconds(60)))
      << job.launcher("127.0.0.1").Stderr();
  job.launcher("127.0.0.2").Kill(SIGKILL);

  // One node is below --np 2: the survivor waits instead of training alone.
  std::this_thread::sleep_for(seconds(kTtlSeconds + 3));
  EXPECT_FALSE(job.ResumedWith(1).has_value());
  EXPECT_FALSE(job.ResumedWith(2).has_value());
  EXPECT_FALSE(job.launcher("127.0.0.1").Wait(milliseconds(0)).has_value())
      << "the survivor gave up: " << job.launcher("127.0.0.1").Stderr();

  const auto replaced_at = Clock::now();
  job.Start("127.0.0.2");
  std::optional<Resumed> two;
  ASSERT_TRUE(WaitFor([&] { return (two = job.ResumedWith(2)).has_value(); }, seconds(30)))
      << job.launcher("127.0.0.1").Stderr();
  std::cout << nlohmann::json{{"bench", "elastic_replacement"}, {"np", "2"},
                              {"resume_after_replacement_s",
                               std::chrono::duration<double>(Clock::now() - replaced_at).count()},
                              {"resumed_step", two->step}}.dump()
            << std::endl;
  EXPECT_GE(two->step, 30);
  job.ExpectAllSucceed(seconds(90));
  EXPECT_EQ(job.KeysInEtcd(), 0u);
  EXPECT_TRUE(launch_test::WaitGone(ProcessesMentioning(tmp_.path()), seconds(5)))
      << "a launcher or trainer outlived the job";
}

}  // namespace
}  // namespace flotilla::elastic_test
