#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "flotilla/common/error.h"
#include "flotilla/roles/role_env.h"
#include "launch/env_contract.h"
#include "launch/node_plan.h"
#include "launch/rendezvous.h"
#include "launch/options_test_util.h"

namespace flotilla::launch {
namespace {

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

TEST(ThreadDefaults, SplitTheCoresUnlessTheUserChose) {
  EXPECT_EQ(ThreadDefaults({"PATH=/bin"}, 4, 8),
            (EnvList{{"OMP_NUM_THREADS", "2"}, {"OPENBLAS_NUM_THREADS", "2"}}));
  EXPECT_EQ(ThreadDefaults({}, 4, 2), (EnvList{{"OMP_NUM_THREADS", "1"}, {"OPENBLAS_NUM_THREADS", "1"}}));
  EXPECT_EQ(ThreadDefaults({"OMP_NUM_THREADS=3"}, 4, 8), (EnvList{{"OPENBLAS_NUM_THREADS", "3"}}));
  EXPECT_EQ(ThreadDefaults({"OMP_NUM_THREADS_X=9", "OPENBLAS_NUM_THREADS=5"}, 1, 8),
            (EnvList{{"OMP_NUM_THREADS", "8"}}));
}

roles::EnvLookup Vars(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
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
