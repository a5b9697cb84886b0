#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "flotilla/common/error.h"
#include "launch/env_contract.h"
#include "launch/node_plan.h"
#include "launch/rendezvous.h"
#include "launch/options_test_util.h"

namespace flotilla::launch {
namespace {

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

}  // namespace
}  // namespace flotilla::launch
