#include <algorithm>
// Unit tests of the launcher's pure parts: planning, merging, the
// environment contract, reports. Process-level tests live in tests/launch_*.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <map>

#include "flotilla/common/error.h"
#include "launch/env_contract.h"
#include "launch/log_file.h"
#include "launch/net_util.h"
#include "launch/node_plan.h"
#include "launch/rendezvous.h"
#include "launch/report.h"
#include "flotilla/roles/role_env.h"

namespace flotilla::launch {
namespace {

LaunchOptions WithCommand() {
  LaunchOptions o;
  o.command = {"/bin/true"};
  return o;
}

TEST(SelectRunMode, PsOptionSelectsPs) {
  LaunchOptions o = WithCommand();
  EXPECT_EQ(SelectRunMode(o), RunMode::kCollective);
  o.server_num = 1;
  EXPECT_EQ(SelectRunMode(o), RunMode::kPs);
  o.run_mode = "collective";
  EXPECT_THROW(SelectRunMode(o), InvalidArgument);
  o.run_mode = "bogus";
  EXPECT_THROW(SelectRunMode(o), InvalidArgument);
}

TEST(SelectRunMode, ElasticNeedsItsServerAndHeterIsPs) {
  LaunchOptions o = WithCommand();
  o.np = "2:3";
  EXPECT_THROW(SelectRunMode(o), InvalidArgument);  // no --elastic_server
  o.elastic_server = "etcd://127.0.0.1:2379";
  EXPECT_EQ(SelectRunMode(o), RunMode::kCollective);
  o.scale = 3;
  EXPECT_EQ(SelectRunMode(o), RunMode::kCollective);
  o.scale = -1;
  EXPECT_THROW(SelectRunMode(o), InvalidArgument);
  LaunchOptions h = WithCommand();
  h.heter_worker_num = 2;
  EXPECT_EQ(SelectRunMode(h), RunMode::kPs);
  h.run_mode = "ps-heter";
  EXPECT_EQ(SelectRunMode(h), RunMode::kPs);
  h.elastic_server = "etcd://127.0.0.1:2379";
  EXPECT_THROW(SelectRunMode(h), InvalidArgument);  // no heter workers in elastic jobs
  LaunchOptions no_heter = WithCommand();
  no_heter.run_mode = "ps-heter";
  try {
    SelectRunMode(no_heter);
    FAIL() << "ps-heter without heter workers was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("--heter_worker_num"), std::string::npos) << e.what();
  }
  LaunchOptions j = WithCommand();
  j.job_id = "job1";  // names the job only
  EXPECT_EQ(SelectRunMode(j), RunMode::kCollective);
}

TEST(DeviceGroups, OnePerDeviceOrSplitEvenly) {
  LaunchOptions o = WithCommand();
  EXPECT_EQ(DeviceGroups(o).size(), 1u);
  o.devices = "4,5,6,7";
  auto g = DeviceGroups(o);
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[2], std::vector<std::string>{"6"});
  o.nproc_per_node = 2;
  g = DeviceGroups(o);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[1], (std::vector<std::string>{"6", "7"}));
  o.nproc_per_node = 3;
  EXPECT_THROW(DeviceGroups(o), InvalidArgument);
  o.devices = "";
  EXPECT_EQ(DeviceGroups(o).size(), 3u);
}

TEST(PlanNode, RankIsNodeTimesNprocPlusLocal) {
  LaunchOptions o = WithCommand();
  o.ips = "10.1.0.1,10.1.0.2,10.1.0.3";
  o.host = "10.1.0.2";
  o.nproc_per_node = 2;
  o.started_port = 7000;
  NodePlan plan = PlanNode(o, RunMode::kCollective);
  EXPECT_EQ(plan.node_index, 1);
  ASSERT_EQ(plan.local.size(), 2u);
  EXPECT_EQ(plan.local[1].id, 3);
  EXPECT_EQ(plan.local[1].port, 7001);
  EXPECT_EQ(plan.world_trainers, 6);
  EXPECT_EQ(plan.master_port, kDefaultMasterPort);
  o.host = "10.9.9.9";
  EXPECT_THROW(PlanNode(o, RunMode::kCollective), InvalidArgument);
  o.host = "10.1.0.2";
  o.nnodes = 2;
  EXPECT_THROW(PlanNode(o, RunMode::kCollective), InvalidArgument);
}

TEST(PlanNode, PsListsPickThisNodesProcesses) {
  LaunchOptions o = WithCommand();
  o.servers = "10.1.0.1:6170,10.1.0.2:6170";
  o.workers = "10.1.0.1,10.1.0.2:6171,10.1.0.2:6172";
  o.host = "10.1.0.2";
  NodePlan plan = PlanNode(o, RunMode::kPs);
  EXPECT_EQ(plan.nodes, (std::vector<std::string>{"10.1.0.1", "10.1.0.2"}));
  ASSERT_EQ(plan.local.size(), 3u);
  EXPECT_EQ(plan.local[0].role, Role::kServer);
  EXPECT_EQ(plan.local[0].id, 1);
  EXPECT_EQ(plan.local[2].id, 2);
  EXPECT_EQ(plan.local[2].port, 6172);
  EXPECT_EQ(plan.world_servers, 2);
  EXPECT_EQ(plan.world_trainers, 3);
}

TEST(PlanNode, HeterWorkersOnOneNodeAndAcrossNodes) {
  LaunchOptions o = WithCommand();
  o.server_num = 2;
  o.worker_num = 2;
  o.heter_worker_num = 2;
  o.started_port = 7000;
  NodePlan one = PlanNode(o, RunMode::kPs);
  ASSERT_EQ(one.local.size(), 6u);
  EXPECT_EQ(one.world_heter_workers, 2);
  ClusterSpec spec = MergeNodePlans(one, {DecodeProcesses(EncodeProcesses(one.local))});
  ASSERT_EQ(spec.heter_workers.size(), 2u);
  EXPECT_EQ(spec.HeterEndpoints(), (std::vector<std::string>{"127.0.0.1:7004", "127.0.0.1:7005"}));
  EXPECT_EQ(spec.heter_workers[1].log_name(), "heterlog.1");
  EXPECT_EQ(spec.heter_workers[1].label(), "heter worker 1");
  EnvList env = ContractEnv(spec, spec.heter_workers[1]);
  std::map<std::string, std::string> vars(env.begin(), env.end());
  EXPECT_EQ(vars["TRAINING_ROLE"], "HETER_TRAINER");
  EXPECT_EQ(vars["PADDLE_HETER_TRAINER_IP_PORT_LIST"], "127.0.0.1:7004,127.0.0.1:7005");
  EXPECT_EQ(vars["PADDLE_CURRENT_ENDPOINT"], "127.0.0.1:7005");
  EXPECT_EQ(vars.count("PADDLE_TRAINER_ID"), 0u);
  std::map<std::string, std::string> trainer;
  for (auto& [n, v] : ContractEnv(spec, spec.trainers[0])) trainer[n] = v;
  EXPECT_EQ(trainer["PADDLE_HETER_TRAINER_IP_PORT_LIST"], "127.0.0.1:7004,127.0.0.1:7005");
  EXPECT_EQ(trainer["TRAINING_ROLE"], "TRAINER");

  LaunchOptions across = WithCommand();
  across.servers = "10.1.0.1:6170";
  across.workers = "10.1.0.1:6171";
  across.heter_workers = "10.1.0.2:6172,10.1.0.2:6173";
  across.host = "10.1.0.2";
  NodePlan second = PlanNode(across, RunMode::kPs);
  EXPECT_EQ(second.nodes, (std::vector<std::string>{"10.1.0.1", "10.1.0.2"}));
  ASSERT_EQ(second.local.size(), 2u);
  EXPECT_EQ(second.local[1].role, Role::kHeterWorker);
  EXPECT_EQ(second.local[1].id, 1);
  EXPECT_EQ(second.local[1].port, 6173);
  across.heter_worker_num = 1;  // one-node simulation's flag in a job across nodes
  EXPECT_THROW(PlanNode(across, RunMode::kPs), InvalidArgument);
}

TEST(MergeNodePlans, AssemblesAndChecksTheWorld) {
  LaunchOptions o = WithCommand();
  o.ips = "10.1.0.1,10.1.0.2";
  o.host = "10.1.0.1";
  o.nproc_per_node = 2;
  o.started_port = 7000;
  NodePlan a = PlanNode(o, RunMode::kCollective);
  o.host = "10.1.0.2";
  NodePlan b = PlanNode(o, RunMode::kCollective);
  auto decoded = DecodeProcesses(EncodeProcesses(b.local));
  ClusterSpec spec = MergeNodePlans(a, {a.local, decoded});
  EXPECT_EQ(spec.TrainerEndpoints(), (std::vector<std::string>{
      "10.1.0.1:7000", "10.1.0.1:7001", "10.1.0.2:7000", "10.1.0.2:7001"}));
  EXPECT_EQ(spec.LocalProcesses().size(), 2u);
  decoded.pop_back();
  EXPECT_THROW(MergeNodePlans(a, {a.local, decoded}), InvalidArgument);
}

TEST(ContractEnv, CollectiveAndPs) {
  LaunchOptions o = WithCommand();
  o.devices = "2,3";
  o.started_port = 7000;
  NodePlan plan = PlanNode(o, RunMode::kCollective);
  ClusterSpec spec = MergeNodePlans(plan, {plan.local});
  spec.master = "127.0.0.1:5000";
  EnvList env = ContractEnv(spec, spec.trainers[1]);
  auto get = [&](const std::string& k) {
    for (auto& [n, v] : env) if (n == k) return v;
    return std::string("<unset>");
  };
  EXPECT_EQ(get("PADDLE_TRAINER_ID"), "1");
  EXPECT_EQ(get("FLAGS_selected_gpus"), "3");
  EXPECT_EQ(get("PADDLE_TRAINER_ENDPOINTS"), "127.0.0.1:7000,127.0.0.1:7001");
  EXPECT_EQ(get("PADDLE_CURRENT_ENDPOINT"), "127.0.0.1:7001");
  EXPECT_EQ(get("PADDLE_MASTER"), "127.0.0.1:5000");
  auto child = ChildEnvironment({"PATH=/bin", "PADDLE_TRAINER_ID=9", "TRAINING_ROLE=PSERVER"}, env);
  EXPECT_EQ(child[0], "PATH=/bin");
  EXPECT_EQ(std::count(child.begin(), child.end(), "PADDLE_TRAINER_ID=9"), 0);
  EXPECT_EQ(std::count(child.begin(), child.end(), "TRAINING_ROLE=PSERVER"), 0);
}

TEST(Report, AbortLineNamesRanksAndCauses) {
  ClusterSpec spec;
  for (int i = 0; i < 4; ++i) spec.trainers.push_back(ProcessSpec{Role::kTrainer, i, 0, i, "h", 1});
  RunResult r;
  ProcessOutcome a{spec.trainers[3], 11, {}, "log/workerlog.3", {"oops"}};
  a.status.signaled = true;
  a.status.signal = SIGKILL;
  ProcessOutcome b{spec.trainers[2], 10, {}, "log/workerlog.2", {"bye"}};
  b.status.code = 3;
  r.failed = {a, b};
  std::string text = AbortReport(spec, r);
  EXPECT_NE(text.find("ABORT!!! Out of all 4 trainers, the trainer process with rank=[2,3] was "
                      "aborted. Please check its log."), std::string::npos) << text;
  EXPECT_NE(text.find("exited with code 3"), std::string::npos);
  EXPECT_NE(text.find("SIGKILL"), std::string::npos);
  EXPECT_NE(text.find("OOM killer"), std::string::npos);
  EXPECT_NE(text.find("| oops"), std::string::npos);
}

TEST(Report, AbortLineNamesHeterWorkers) {
  ClusterSpec spec;
  for (int i = 0; i < 2; ++i) spec.heter_workers.push_back(ProcessSpec{Role::kHeterWorker, i, 0, i, "h", 1});
  RunResult r;
  ProcessOutcome a{spec.heter_workers[1], 12, {}, "log/heterlog.1", {"boom"}};
  a.status.code = 1;
  r.failed = {a};
  std::string text = AbortReport(spec, r);
  EXPECT_NE(text.find("ABORT!!! Out of all 2 heter workers, the heter worker process with id=[1] "
                      "was aborted."), std::string::npos) << text;
  EXPECT_NE(text.find("heter worker 1 (pid 12"), std::string::npos) << text;
}

TEST(LastLines, KeepsTheEnd) {
  EXPECT_EQ(LastLines("a\nb\nc\n", 2), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(LastLines("a\nb", 5), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(LastLines("", 3).empty());
}

}  // namespace
}  // namespace flotilla::launch

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
TEST(ThreadDefaults, SplitTheCoresUnlessTheUserChose) {
  EXPECT_EQ(ThreadDefaults({"PATH=/bin"}, 4, 8),
            (EnvList{{"OMP_NUM_THREADS", "2"}, {"OPENBLAS_NUM_THREADS", "2"}}));
  EXPECT_EQ(ThreadDefaults({}, 4, 2), (EnvList{{"OMP_NUM_THREADS", "1"}, {"OPENBLAS_NUM_THREADS", "1"}}));
  EXPECT_EQ(ThreadDefaults({"OMP_NUM_THREADS=3"}, 4, 8), (EnvList{{"OPENBLAS_NUM_THREADS", "3"}}));
  EXPECT_EQ(ThreadDefaults({"OMP_NUM_THREADS_X=9", "OPENBLAS_NUM_THREADS=5"}, 1, 8),
            (EnvList{{"OMP_NUM_THREADS", "8"}}));
}

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

namespace flotilla::launch {
namespace {

TEST(MasterRendezvous, OptionsAreChecked) {
  LaunchOptions o = WithCommand();
  o.master = "127.0.0.1:6123";
  EXPECT_THROW(MakeMasterRendezvous(o), InvalidArgument) << "no --nnodes";
  o.nnodes = 2;
  EXPECT_NO_THROW(MakeMasterRendezvous(o));
  o.ips = "10.0.0.1,10.0.0.2";
  EXPECT_THROW(MakeMasterRendezvous(o), InvalidArgument) << "--ips as well";
  o.ips = "127.0.0.1";
  o.node_rank = 2;
  EXPECT_THROW(MakeMasterRendezvous(o), InvalidArgument) << "rank beyond nnodes";
  o.node_rank = -1;
  o.server_num = 2;
  EXPECT_NO_THROW(MakeMasterRendezvous(o)) << "ps job: each node runs its --server_num";
  o.servers = "10.0.0.1:6000";
  o.workers = "10.0.0.2";
  EXPECT_THROW(MakeMasterRendezvous(o), InvalidArgument) << "--servers as well";
  o.servers = o.workers = "";
  o.server_num = 0;
  o.master = "127.0.0.1";
  EXPECT_THROW(MakeMasterRendezvous(o), InvalidArgument) << "no port";
}

}  // namespace
}  // namespace flotilla::launch

namespace flotilla::launch {
namespace {

roles::EnvLookup Vars(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(PlanNode, PsNodesThatMetAtTheMasterNumberInNodeOrder) {
  LaunchOptions o = WithCommand();
  NodeLayout layout{{"10.0.0.1", "10.0.0.2", "10.0.0.3"}, 1, {{1, 0}, {1, 2}, {0, 1}}};
  const NodePlan plan = PlanNode(o, RunMode::kPs, layout);
  ASSERT_EQ(plan.local.size(), 3u);
  EXPECT_EQ(plan.local[0].role, Role::kServer);
  EXPECT_EQ(plan.local[0].id, 1);
  EXPECT_EQ(plan.local[1].role, Role::kTrainer);
  EXPECT_EQ(plan.local[1].id, 0);
  EXPECT_EQ(plan.local[2].id, 1);
  EXPECT_EQ(plan.local[2].host, "10.0.0.2");
  EXPECT_EQ(plan.world_servers, 2);
  EXPECT_EQ(plan.world_trainers, 3);
  NodeLayout no_workers{{"10.0.0.1"}, 0, {{2, 0}}};
  EXPECT_THROW(PlanNode(o, RunMode::kPs, no_workers), InvalidArgument);
}

TEST(ApplyEngineEnv, OneLauncherPerSlurmTask) {
  LaunchOptions o;
  const std::string said =
      ApplyEngineEnv(o, Vars({{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"},
                              {"SLURM_NNODES", "2"},
                              {"SLURM_JOB_NODELIST", "fn[1-2]"}, {"SLURM_JOB_ID", "4242"}}));
  EXPECT_EQ(o.master, "fn1:19242");
  EXPECT_EQ(o.nnodes, 2);
  EXPECT_EQ(o.node_rank, 1);
  EXPECT_EQ(o.job_id, "4242");
  EXPECT_NE(said.find("SLURM_PROCID"), std::string::npos) << said;
}

TEST(ApplyEngineEnv, PaddleJobPodsArriveInAnyOrder) {
  LaunchOptions o;
  ApplyEngineEnv(o, Vars({{"PADDLE_MASTER", "train-worker-0:36543"}, {"PADDLE_NNODES", "2"},
                          {"PADDLE_JOB_ID", "train"}}));
  EXPECT_EQ(o.master, "train-worker-0:36543");
  EXPECT_EQ(o.nnodes, 2);
  EXPECT_EQ(o.node_rank, -1);
  EXPECT_EQ(o.job_id, "train");
}

TEST(ApplyEngineEnv, OwnLayoutOrOneNodeOrNoEngineChangesNothing) {
  const auto torch = Vars({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.0.0.1"},
                           {"MASTER_PORT", "29500"}});
  LaunchOptions with_ips;
  with_ips.ips = "10.0.0.1,10.0.0.2";
  EXPECT_EQ(ApplyEngineEnv(with_ips, torch), "");
  EXPECT_TRUE(with_ips.master.empty());
  LaunchOptions plain;
  EXPECT_EQ(ApplyEngineEnv(plain, Vars({})), "");
  EXPECT_TRUE(plain.master.empty());
  LaunchOptions one;
  EXPECT_EQ(ApplyEngineEnv(one, Vars({{"RANK", "0"}, {"WORLD_SIZE", "1"},
                                      {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1"}})), "");
  EXPECT_TRUE(one.master.empty());
  LaunchOptions flags;
  flags.node_rank = 0;
  ApplyEngineEnv(flags, torch);
  EXPECT_EQ(flags.node_rank, 0) << "an explicit --rank wins";
  EXPECT_EQ(flags.master, "10.0.0.1:29500");
}

TEST(ApplyEngineEnv, TasksWithoutAMasterAreAnError) {
  LaunchOptions o;
  EXPECT_THROW(ApplyEngineEnv(o, Vars({{"OMPI_COMM_WORLD_RANK", "1"},
                                       {"OMPI_COMM_WORLD_SIZE", "2"}})),
               InvalidArgument);
}

TEST(ChildEnvironment, DropsTheEngineTaskThatStartedTheLauncher) {
  const auto env = ChildEnvironment({"SLURM_PROCID=1", "SLURM_JOB_ID=7", "RANK=1", "HOME=/root",
                                     "OMPI_COMM_WORLD_RANK=1"},
                                    {{"PADDLE_TRAINER_ID", "3"}});
  EXPECT_EQ(env, std::vector<std::string>({"SLURM_JOB_ID=7", "HOME=/root", "PADDLE_TRAINER_ID=3"}));
}

}  // namespace
}  // namespace flotilla::launch
