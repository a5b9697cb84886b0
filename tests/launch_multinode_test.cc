// Multi-node launches on one machine: two network namespaces joined by a
// veth pair are two hosts with their own 10.x addresses. Each runs the same
// `flotilla launch --ips A,B --nproc_per_node 2 probe`. Needs root (skips
// otherwise); the namespaces are deleted on every path.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>

#include "launch_test_util.h"

namespace flotilla::launch_test {
namespace {

using std::chrono::seconds;

bool Sh(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

// Two namespaces "hosts" A (10.N.M.1) and B (10.N.M.2) on one veth link.
class TwoHosts : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "multi-node test needs root to create network namespaces";
    const int id = getpid() % 60000;
    suffix_ = std::to_string(id);
    a_ = "flt_a_" + suffix_;
    b_ = "flt_b_" + suffix_;
    const std::string subnet = "10.211." + std::to_string(id % 250) + ".";
    ip_a_ = subnet + "1";
    ip_b_ = subnet + "2";
    const std::string va = "fva" + suffix_, vb = "fvb" + suffix_;
    created_ = Sh("ip netns add " + a_);
    created_ = Sh("ip netns add " + b_) && created_;
    const bool ok = created_ && Sh("ip link add " + va + " type veth peer name " + vb) &&
                    Sh("ip link set " + va + " netns " + a_) &&
                    Sh("ip link set " + vb + " netns " + b_) &&
                    Sh("ip -n " + a_ + " addr add " + ip_a_ + "/24 dev " + va) &&
                    Sh("ip -n " + b_ + " addr add " + ip_b_ + "/24 dev " + vb) &&
                    Sh("ip -n " + a_ + " link set " + va + " up") &&
                    Sh("ip -n " + b_ + " link set " + vb + " up") &&
                    Sh("ip -n " + a_ + " link set lo up") && Sh("ip -n " + b_ + " link set lo up");
    if (!ok) GTEST_SKIP() << "cannot create network namespaces and a veth pair here (ip netns/ip link failed)";
  }

  void TearDown() override {
    // Deleting a namespace deletes the veth pair with it.
    Sh("ip netns del " + a_);
    Sh("ip netns del " + b_);
  }

  // `flotilla launch` with `cluster` options (default: --ips A,B
  // --nproc_per_node 2), then the probe writing to `dir`.
  std::vector<std::string> Launch(const std::string& dir, const std::vector<std::string>& options,
                                  const std::vector<std::string>& probe_args,
                                  std::vector<std::string> cluster = {}) {
    if (cluster.empty()) cluster = {"--ips", ip_a_ + "," + ip_b_, "--nproc_per_node", "2"};
    std::vector<std::string> argv = {FlotillaBin(), "launch", "--quiet", "--log_dir", dir + "/log"};
    argv.insert(argv.end(), cluster.begin(), cluster.end());
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back(ProbeBin());
    argv.push_back("--out");
    argv.push_back(dir);
    argv.insert(argv.end(), probe_args.begin(), probe_args.end());
    return argv;
  }

  std::string suffix_, a_, b_, ip_a_, ip_b_;
  bool created_ = false;
};

TEST_F(TwoHosts, FourRanksWithTheRightEnvironment) {
  TempDir da, db;
  // Node B first: it waits for node 0's store to come up.
  Child node_b(Launch(db.path(), {}, {"--store_barrier"}), db.path(), {}, b_);
  Child node_a(Launch(da.path(), {}, {"--store_barrier"}), da.path(), {}, a_);
  EXPECT_EQ(node_a.WaitCode(seconds(60)), 0) << node_a.Stderr();
  EXPECT_EQ(node_b.WaitCode(seconds(60)), 0) << node_b.Stderr();
  const std::string endpoints = ReadText(da / "log/endpoints.log");
  EXPECT_EQ(endpoints, ReadText(db / "log/endpoints.log")) << "nodes disagree on the endpoints";
  std::string master;
  for (int rank = 0; rank < 4; ++rank) {
    const TempDir& d = rank < 2 ? da : db;
    auto env = ProbeEnv(d.path(), std::to_string(rank));
    EXPECT_EQ(env["PADDLE_TRAINER_ID"], std::to_string(rank));
    EXPECT_EQ(env["PADDLE_TRAINERS_NUM"], "4");
    EXPECT_EQ(env["PADDLE_RANK_IN_NODE"], std::to_string(rank % 2));
    EXPECT_EQ(env["PADDLE_NNODES"], "2");
    EXPECT_EQ(env["PADDLE_LOCAL_SIZE"], "2");
    EXPECT_EQ(env["FLAGS_selected_gpus"], std::to_string(rank % 2));
    EXPECT_EQ(env["FLOTILLA_HOST_ID"], rank < 2 ? ip_a_ : ip_b_);
    const std::string current = env["PADDLE_CURRENT_ENDPOINT"];
    EXPECT_EQ(current.rfind((rank < 2 ? ip_a_ : ip_b_) + ":", 0), 0u) << current;
    EXPECT_NE(endpoints.find(current + "\n"), std::string::npos);
    std::string list = env["PADDLE_TRAINER_ENDPOINTS"];
    for (auto& ch : list) ch = ch == ',' ? '\n' : ch;
    EXPECT_EQ("PADDLE_TRAINER_ENDPOINTS:\n" + list + "\n", endpoints);
    if (rank == 0) master = env["PADDLE_MASTER"];
    EXPECT_EQ(env["PADDLE_MASTER"], master);
    EXPECT_EQ(ReadText(d / ("barrier." + std::to_string(rank))), "ok") << "rank " << rank;
  }
  EXPECT_EQ(master, ip_a_ + ":6070");
  EXPECT_NO_PROBES_LEFT(da.path());
  EXPECT_NO_PROBES_LEFT(db.path());
}

TEST_F(TwoHosts, FailureOnOneNodeStopsTheOther) {
  TempDir da, db;
  Child node_a(Launch(da.path(), {"--grace_period", "2"}, {"--delay", "0.5", "--exit", "9@3", "--sleep", "60"}),
               da.path(), {}, a_);
  Child node_b(Launch(db.path(), {"--grace_period", "2"}, {"--delay", "0.5", "--exit", "9@3", "--sleep", "60"}),
               db.path(), {}, b_);
  EXPECT_EQ(node_b.WaitCode(seconds(30)), 9) << node_b.Stderr();
  EXPECT_NE(node_b.Stderr().find("ABORT!!! Out of all 4 trainers, the trainer process with rank=[3]"),
            std::string::npos) << node_b.Stderr();
  EXPECT_EQ(node_a.WaitCode(seconds(30)), 9) << node_a.Stderr();
  EXPECT_NE(node_a.Stderr().find("stopped because of node 1: rank 3 on node 1"), std::string::npos) << node_a.Stderr();
  EXPECT_NO_PROBES_LEFT(da.path());
  EXPECT_NO_PROBES_LEFT(db.path());
}

// The real thing: seed 001's train_with_fleet (examples/) data-parallel over
// 4 ranks on two hosts — the role maker reads the contract, the process group
// meets in PADDLE_MASTER and gloo listens on FLOTILLA_GLOO_HOSTNAME.
TEST_F(TwoHosts, FleetTrainingAcrossHosts) {
  const std::string example = Bin("train_with_fleet");
  ASSERT_BUILT(example);
  TempDir da, db;
  auto args = [&](const TempDir& d) {
    return std::vector<std::string>{FlotillaBin(), "launch", "--quiet", "--log_dir", d / "log",
                                    "--ips", ip_a_ + "," + ip_b_, "--nproc_per_node", "2", example,
                                    "--steps", "10", "--hidden", "64", "--warmup", "2"};
  };
  Child node_b(args(db), db.path(), {}, b_);
  Child node_a(args(da), da.path(), {}, a_);
  EXPECT_EQ(node_a.WaitCode(seconds(120)), 0) << node_a.Stderr();
  EXPECT_EQ(node_b.WaitCode(seconds(120)), 0) << node_b.Stderr();
  EXPECT_NE(ReadText(da / "log/workerlog.0").find("\"ranks\":4"), std::string::npos);
}

// Heterogeneous PS across hosts: host A runs the 2 servers and 2 CPU
// trainers, host B the 2 heter workers, so every mini-batch's activations
// and gradients cross the link. The AUC matches the plain PS job's (within
// 0.005) run the same way across the hosts.
TEST_F(TwoHosts, HeterWorkersOnTheOtherHost) {
  const std::string example = Bin("wide_and_deep");
  ASSERT_BUILT(example);
  auto run = [&](bool heter) {
    TempDir da, db;
    std::vector<std::string> cluster = {"--servers", ip_a_ + ":6170," + ip_a_ + ":6171",
                                        "--workers", ip_a_ + ":6172," + ip_a_ + ":6173"};
    if (heter) cluster.insert(cluster.end(), {"--heter_workers", ip_b_ + ":6174," + ip_b_ + ":6175"});
    auto args = [&](const TempDir& d, const std::string& host) {
      std::vector<std::string> argv = {FlotillaBin(), "launch", "--quiet", "--log_dir", d / "log", "--host", host};
      argv.insert(argv.end(), cluster.begin(), cluster.end());
      argv.insert(argv.end(), {example, "--mode", "async", "--train_samples", "40000", "--test_samples", "5000",
                               "--hidden_size", "64"});
      return argv;
    };
    std::unique_ptr<Child> node_b;
    if (heter) node_b = std::make_unique<Child>(args(db, ip_b_), db.path(), std::vector<std::string>{}, b_);
    Child node_a(args(da, ip_a_), da.path(), {}, a_);
    EXPECT_EQ(node_a.WaitCode(seconds(300)), 0) << node_a.Stderr();
    if (node_b) {
      EXPECT_EQ(node_b->WaitCode(seconds(60)), 0) << node_b->Stderr();
      EXPECT_NE(ReadText(db / "log/heterlog.1").find("mini-batches for 1 trainer(s)"), std::string::npos)
          << ReadText(db / "log/heterlog.1");
    }
    nlohmann::json r = LastJsonLine(ReadText(da / "log/workerlog.0"));
    std::cout << (heter ? "heter " : "plain ") << r.dump() << std::endl;
    return r;
  };
  nlohmann::json plain = run(false), heter = run(true);
  ASSERT_TRUE(plain.contains("auc") && heter.contains("auc"));
  EXPECT_NEAR(heter["auc"].get<double>(), plain["auc"].get<double>(), 0.005)
      << "plain " << plain.dump() << "\nheter " << heter.dump();
}

// Seed 001's multi-node command with its headline model: ResNet50 on an
// ImageNet-layout set (the digits JPEGs, made by scripts/make_digits_imagenet.sh)
// across the two hosts, 4 ranks, ending with a validation over every rank.
TEST_F(TwoHosts, ResNet50AcrossHosts) {
  const std::string example = Bin("train_with_fleet");
  ASSERT_BUILT(example);
  TempDir da, db, data;
  const std::string digits = data / "digits";
  const std::string make = std::string(std::getenv("FLOTILLA_SOURCE_DIR")) + "/scripts/make_digits_imagenet.sh";
  ASSERT_EQ(std::system((make + " " + digits + " --size 32 >/dev/null").c_str()), 0);
  auto args = [&](const TempDir& d) {
    return std::vector<std::string>{FlotillaBin(), "launch", "--quiet", "--log_dir", d / "log",
                                    "--ips", ip_a_ + "," + ip_b_, "--nproc_per_node", "2", example,
                                    "--model=ResNet50", "--data_dir=" + digits, "--image_size", "32",
                                    "--batch_size", "4", "--max_iter", "2", "--print_step", "1"};
  };
  Child node_b(args(db), db.path(), {}, b_);
  Child node_a(args(da), da.path(), {}, a_);
  EXPECT_EQ(node_a.WaitCode(seconds(200)), 0) << node_a.Stderr();
  EXPECT_EQ(node_b.WaitCode(seconds(200)), 0) << node_b.Stderr();
  const std::string log = ReadText(da / "log/workerlog.0");
  EXPECT_NE(log.find("\"ranks\":4"), std::string::npos) << log;
  EXPECT_NE(log.find("validation: loss"), std::string::npos) << log;
  EXPECT_NE(log.find("(355 images)"), std::string::npos) << "validation covers every rank's shard: " << log;
}

// Paddle 2's style: no --ips; the nodes meet at --master and are numbered
// as they arrive (node 0 is the one that has the master's address).
TEST_F(TwoHosts, MasterAndNnodesInsteadOfIps) {
  TempDir da, db;
  const std::vector<std::string> cluster = {"--master", ip_a_ + ":6123", "--nnodes", "2",
                                            "--nproc_per_node", "2"};
  Child node_b(Launch(db.path(), {}, {"--store_barrier"}, cluster), db.path(), {}, b_);
  Child node_a(Launch(da.path(), {}, {"--store_barrier"}, cluster), da.path(), {}, a_);
  EXPECT_EQ(node_a.WaitCode(seconds(60)), 0) << node_a.Stderr();
  EXPECT_EQ(node_b.WaitCode(seconds(60)), 0) << node_b.Stderr();
  auto r3 = ProbeEnv(db.path(), "3");
  EXPECT_EQ(r3["PADDLE_TRAINERS_NUM"], "4");
  EXPECT_EQ(r3["PADDLE_MASTER"], ip_a_ + ":6123");
  EXPECT_EQ(r3["PADDLE_CURRENT_ENDPOINT"].get<std::string>().rfind(ip_b_ + ":", 0), 0u)
      << "node B must find its own address (the one that routes to the master)";
  EXPECT_EQ(ProbeEnv(da.path(), "0")["PADDLE_TRAINER_ENDPOINTS"], r3["PADDLE_TRAINER_ENDPOINTS"]);
  EXPECT_EQ(ReadText(db / "barrier.2"), "ok");
  EXPECT_NO_PROBES_LEFT(da.path());
  EXPECT_NO_PROBES_LEFT(db.path());
}

// A node whose launcher is SIGKILLed cannot say goodbye: its children die
// with it (PDEATHSIG) and the other node notices the missing heartbeat.
TEST_F(TwoHosts, KilledNodeIsNoticedByTheOthers) {
  TempDir da, db;
  const std::vector<std::string> options = {"--node_timeout", "3"};
  const std::vector<std::string> probe = {"--store_barrier", "--sleep", "60"};
  Child node_a(Launch(da.path(), options, probe), da.path(), {}, a_);
  Child node_b(Launch(db.path(), options, probe), db.path(), {}, b_);
  ASSERT_TRUE(WaitForFiles(db.path(), "barrier.", 2, seconds(30))) << node_b.Stderr();
  node_b.Kill(SIGKILL);
  EXPECT_EQ(node_b.WaitCode(seconds(10)), 128 + SIGKILL);
  EXPECT_EQ(node_a.WaitCode(seconds(30)), 1) << node_a.Stderr();
  EXPECT_NE(node_a.Stderr().find("node 1 (" + ip_b_ + ") has not been heard from"),
            std::string::npos) << node_a.Stderr();
  EXPECT_NO_PROBES_LEFT(da.path());
  EXPECT_NO_PROBES_LEFT(db.path());
}

TEST_F(TwoHosts, UnreachableNodeZeroIsNamed) {
  TempDir db;
  Child node_b(Launch(db.path(), {"--rendezvous_timeout", "1"}, {}), db.path(), {}, b_);
  EXPECT_EQ(node_b.WaitCode(seconds(30)), 2);
  const std::string err = node_b.Stderr();
  EXPECT_NE(err.find("could not reach node 0's rendezvous store at " + ip_a_ + ":6070"),
            std::string::npos) << err;
  EXPECT_NO_PROBES_LEFT(db.path());
}

TEST_F(TwoHosts, NodesThatDisagreeDoNotStart) {
  TempDir da, db;
  Child node_a(Launch(da.path(), {}, {}, {"--ips", ip_a_ + "," + ip_b_, "--nproc_per_node", "2"}),
               da.path(), {}, a_);
  Child node_b(Launch(db.path(), {}, {}, {"--ips", ip_a_ + "," + ip_b_, "--nproc_per_node", "3"}),
               db.path(), {}, b_);
  EXPECT_EQ(node_a.WaitCode(seconds(30)), 2);
  EXPECT_EQ(node_b.WaitCode(seconds(30)), 2);
  const std::string err = node_a.Stderr() + node_b.Stderr();
  EXPECT_NE(err.find("every node must run the same number"), std::string::npos) << err;
  EXPECT_EQ(ProbePids(da.path()).size() + ProbePids(db.path()).size(), 0u) << "nothing may start";
}

// Servers on both hosts, workers on both; the servers stop once every
// worker of the job (on either host) has exited 0.
TEST_F(TwoHosts, ParameterServerJobAcrossHosts) {
  TempDir da, db;
  const std::vector<std::string> cluster = {"--servers", ip_a_ + "," + ip_b_, "--workers",
                                            ip_a_ + "," + ip_b_ + "," + ip_b_};
  const std::vector<std::string> probe = {"--store_barrier", "--sleep", "60@s0", "--sleep",
                                          "60@s1", "--sleep", "0.3"};
  Child node_b(Launch(db.path(), {}, probe, cluster), db.path(), {}, b_);
  Child node_a(Launch(da.path(), {}, probe, cluster), da.path(), {}, a_);
  EXPECT_EQ(node_a.WaitCode(seconds(60)), 0) << node_a.Stderr();
  EXPECT_EQ(node_b.WaitCode(seconds(60)), 0) << node_b.Stderr();
  auto w2 = ProbeEnv(db.path(), "w2");
  EXPECT_EQ(w2["TRAINING_ROLE"], "TRAINER");
  EXPECT_EQ(w2["PADDLE_TRAINER_ID"], "2");
  EXPECT_EQ(w2["PADDLE_TRAINERS_NUM"], "3");
  auto s0 = ProbeEnv(da.path(), "s0");
  EXPECT_EQ(s0["TRAINING_ROLE"], "PSERVER");
  EXPECT_EQ(s0["POD_IP"], ip_a_);
  EXPECT_EQ(s0["PADDLE_PSERVERS_IP_PORT_LIST"], w2["PADDLE_PSERVERS_IP_PORT_LIST"]);
  EXPECT_EQ(s0["PADDLE_TRAINER_ENDPOINTS"], w2["PADDLE_TRAINER_ENDPOINTS"]);
  EXPECT_EQ(ReadText(da / "log/endpoints.log"), ReadText(db / "log/endpoints.log"));
  for (const char* tag : {"w1", "w2", "s1"}) EXPECT_EQ(ReadText(db / (std::string("barrier.") + tag)), "ok");
  EXPECT_NE(node_a.Stderr().find("all 3 trainers finished; stopping the servers"), std::string::npos);
  EXPECT_NO_PROBES_LEFT(da.path());
  EXPECT_NO_PROBES_LEFT(db.path());
}

// Real parameter-server training across the two hosts: seed 000's model
// with a server and two workers on each host, gradients and parameters
// crossing the veth link; every worker converges and everything exits 0.
TEST_F(TwoHosts, ParameterServerTrainingAcrossHosts) {
  const std::string example = Bin("dist_fit_a_line");
  ASSERT_BUILT(example);
  TempDir da, db;
  auto args = [&](const TempDir& d) {
    return std::vector<std::string>{FlotillaBin(), "launch", "--quiet", "--log_dir", d / "log",
                                    "--servers", ip_a_ + "," + ip_b_, "--workers",
                                    ip_a_ + "," + ip_a_ + "," + ip_b_ + "," + ip_b_, example,
                                    "--epochs", "40", "--mode", "sync"};
  };
  Child node_b(args(db), db.path(), {}, b_);
  Child node_a(args(da), da.path(), {}, a_);
  EXPECT_EQ(node_a.WaitCode(seconds(180)), 0) << node_a.Stderr();
  EXPECT_EQ(node_b.WaitCode(seconds(180)), 0) << node_b.Stderr();
  for (const auto& [dir, first] : {std::pair{&da, 0}, std::pair{&db, 2}}) {
    for (int w = first; w < first + 2; ++w) {
      const std::string log = ReadText(*dir / ("log/workerlog." + std::to_string(w)));
      const size_t at = log.rfind("\"test_mse\":");
      ASSERT_NE(at, std::string::npos) << "worker " << w << " printed no result:\n" << log;
      const double mse = std::stod(log.substr(at + 11));
      EXPECT_LT(mse, 30.0) << "worker " << w << " did not converge:\n" << log;
    }
  }
}

}  // namespace
}  // namespace flotilla::launch_test
