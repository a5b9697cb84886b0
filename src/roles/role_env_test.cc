#include "flotilla/roles/role_env.h"

#include <gtest/gtest.h>

#include <map>

#include "flotilla/common/error.h"

namespace flotilla::roles {
namespace {

using Vars = std::map<std::string, std::string>;

EnvLookup From(const Vars& vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

RoleEnvironment Read(const Vars& vars) { return RoleEnvironment::Read(From(vars)); }

std::string ErrorOf(const Vars& vars) {
  try {
    Read(vars);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(RoleEnvironment, NothingSetNamesNoRole) {
  auto env = Read({});
  EXPECT_FALSE(env.HasRank());
  EXPECT_EQ(env.Get(RoleField::kMaster), nullptr);
  EXPECT_NE(env.Explain().find("(no source)"), std::string::npos);
}

TEST(RoleEnvironment, PaddleLauncherVariables) {
  auto env = Read({{"PADDLE_TRAINER_ID", "3"}, {"PADDLE_TRAINERS_NUM", "4"},
                   {"PADDLE_RANK_IN_NODE", "1"}, {"PADDLE_LOCAL_SIZE", "2"},
                   {"PADDLE_NNODES", "2"}, {"PADDLE_MASTER", "10.0.0.1:6070"},
                   {"PADDLE_JOB_ID", "bert"}});
  EXPECT_EQ(env.Int(RoleField::kRank), 3);
  EXPECT_EQ(env.Int(RoleField::kWorldSize), 4);
  EXPECT_EQ(env.Int(RoleField::kLocalRank), 1);
  EXPECT_EQ(env.Int(RoleField::kLocalWorldSize), 2);
  EXPECT_EQ(env.Int(RoleField::kNnodes), 2);
  EXPECT_EQ(env.Value(RoleField::kMaster), "10.0.0.1:6070");
  EXPECT_EQ(env.Value(RoleField::kJobId), "bert");
  EXPECT_EQ(env.Get(RoleField::kRank)->origin, "PADDLE_TRAINER_ID");
}

TEST(RoleEnvironment, KubeflowPaddleJob) {
  auto env = Read({{"PADDLE_MASTER", "train-worker-0:36543"}, {"PADDLE_NNODES", "2"},
                   {"PADDLE_JOB_ID", "train"}});
  EXPECT_FALSE(env.HasRank());
  EXPECT_EQ(env.Value(RoleField::kMaster), "train-worker-0:36543");
  EXPECT_EQ(env.Int(RoleField::kNnodes), 2);
  EXPECT_EQ(env.Value(RoleField::kJobId), "train");
}

TEST(RoleEnvironment, TorchStyle) {
  auto env = Read({{"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}, {"WORLD_SIZE", "2"},
                   {"RANK", "1"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"},
                   {"GROUP_RANK", "1"}});
  EXPECT_EQ(env.Int(RoleField::kRank), 1);
  EXPECT_EQ(env.Int(RoleField::kWorldSize), 2);
  EXPECT_EQ(env.Int(RoleField::kNodeRank), 1);
  EXPECT_EQ(env.Value(RoleField::kMaster), "10.0.0.1:29500");
  EXPECT_EQ(env.Get(RoleField::kMaster)->family, EnvFamily::kPyTorch);
  EXPECT_NE(ErrorOf({{"MASTER_ADDR", "h"}}).find("MASTER_PORT"), std::string::npos);
}

TEST(RoleEnvironment, KubernetesIndexedJobRankWithTorchWorldSize) {
  auto env = Read({{"JOB_COMPLETION_INDEX", "1"}, {"WORLD_SIZE", "2"},
                   {"MASTER_ADDR", "train-0.train"}, {"MASTER_PORT", "29500"}});
  EXPECT_EQ(env.Int(RoleField::kRank), 1);
  EXPECT_EQ(env.Get(RoleField::kRank)->family, EnvFamily::kKubernetes);
  EXPECT_EQ(env.Value(RoleField::kMaster), "train-0.train:29500");
}

const Vars kSlurmTask = {{"SLURM_STEP_ID", "0"},          {"SLURM_PROCID", "3"},
                         {"SLURM_NTASKS", "4"},
                         {"SLURM_LOCALID", "1"},          {"SLURM_NODEID", "1"},
                         {"SLURM_NNODES", "2"},           {"SLURM_TASKS_PER_NODE", "2(x2)"},
                         {"SLURM_JOB_NODELIST", "gpu[07-08]"}, {"SLURM_JOB_ID", "123456"}};

TEST(RoleEnvironment, SlurmTask) {
  auto env = Read(kSlurmTask);
  EXPECT_EQ(env.Int(RoleField::kRank), 3);
  EXPECT_EQ(env.Int(RoleField::kWorldSize), 4);
  EXPECT_EQ(env.Int(RoleField::kLocalRank), 1);
  EXPECT_EQ(env.Int(RoleField::kLocalWorldSize), 2);
  EXPECT_EQ(env.Int(RoleField::kNodeRank), 1);
  EXPECT_EQ(env.Int(RoleField::kNnodes), 2);
  EXPECT_EQ(env.Value(RoleField::kNodes), "gpu07,gpu08");
  EXPECT_EQ(env.Value(RoleField::kMaster), "gpu07:18456");  // 15000 + 3456
  EXPECT_EQ(env.Value(RoleField::kJobId), "123456");
}

TEST(RoleEnvironment, SlurmBatchScriptIsNotATask) {
  Vars vars = kSlurmTask;
  vars.erase("SLURM_STEP_ID");
  auto env = Read(vars);
  EXPECT_FALSE(env.HasRank());
  EXPECT_EQ(env.Get(RoleField::kWorldSize), nullptr);
  EXPECT_EQ(env.Get(RoleField::kNnodes), nullptr);
  EXPECT_EQ(env.Value(RoleField::kJobId), "123456");
  EXPECT_EQ(env.Value(RoleField::kNodes), "gpu07,gpu08");
}

TEST(RoleEnvironment, SlurmStepNodesWinOverTheJobs) {
  Vars vars = kSlurmTask;
  vars["SLURM_STEP_NODELIST"] = "gpu08";
  EXPECT_EQ(Read(vars).Value(RoleField::kNodes), "gpu08");
}

TEST(RoleEnvironment, HigherFamiliesOverrideDerivedValues) {
  Vars vars = kSlurmTask;
  vars["MASTER_ADDR"] = "login1";
  vars["MASTER_PORT"] = "29400";
  vars["PADDLE_JOB_ID"] = "mine";
  auto env = Read(vars);
  EXPECT_EQ(env.Value(RoleField::kMaster), "login1:29400");
  EXPECT_EQ(env.Value(RoleField::kJobId), "mine");
  const std::string explain = env.Explain();
  EXPECT_NE(explain.find("MASTER_ADDR:MASTER_PORT (PyTorch)"), std::string::npos) << explain;
  EXPECT_NE(explain.find("overridden: SLURM_JOB_ID=123456 (Slurm)"), std::string::npos) << explain;
}

TEST(RoleEnvironment, AgreeingFamiliesAreFine) {
  Vars vars = kSlurmTask;
  vars["RANK"] = "3";
  vars["PMIX_RANK"] = "3";
  auto env = Read(vars);
  EXPECT_EQ(env.Get(RoleField::kRank)->family, EnvFamily::kPyTorch);
  EXPECT_NE(env.Explain().find("agrees: SLURM_PROCID=3 (Slurm)"), std::string::npos);
}

TEST(RoleEnvironment, ConflictsNameBothVariables) {
  Vars vars = kSlurmTask;
  vars["RANK"] = "0";
  const std::string e = ErrorOf(vars);
  EXPECT_NE(e.find("conflicting sources for the rank"), std::string::npos) << e;
  EXPECT_NE(e.find("RANK=0 (PyTorch)"), std::string::npos) << e;
  EXPECT_NE(e.find("SLURM_PROCID=3 (Slurm)"), std::string::npos) << e;
  EXPECT_NE(ErrorOf({{"PADDLE_TRAINERS_NUM", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}})
                .find("PADDLE_TRAINERS_NUM=2 (Paddle) but OMPI_COMM_WORLD_SIZE=4"),
            std::string::npos);
}

TEST(RoleEnvironment, FlagsWinWithoutAConflict) {
  auto env = RoleEnvironment::Read(From(kSlurmTask),
                                   {{RoleField::kNnodes, "3", EnvFamily::kFlag, "--nnodes"}});
  EXPECT_EQ(env.Int(RoleField::kNnodes), 3);
  EXPECT_EQ(env.Get(RoleField::kNnodes)->family, EnvFamily::kFlag);
}

TEST(RoleEnvironment, OpenMpi) {
  auto env = Read({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                   {"OMPI_MCA_ess_base_jobid", "1234"}});
  EXPECT_EQ(env.Int(RoleField::kRank), 2);
  EXPECT_EQ(env.Int(RoleField::kLocalWorldSize), 2);
  EXPECT_EQ(env.Value(RoleField::kJobId), "1234");
  EXPECT_EQ(env.Get(RoleField::kMaster), nullptr);
  EXPECT_EQ(Read({{"PMIX_RANK", "5"}}).Int(RoleField::kRank), 5);
}

TEST(RoleEnvironment, MalformedValuesAreNamed) {
  EXPECT_NE(ErrorOf({{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "x"}}).find("SLURM_PROCID"),
            std::string::npos);
  EXPECT_NE(ErrorOf({{"RANK", "-1"}}).find("RANK=-1"), std::string::npos);
  EXPECT_NE(ErrorOf({{"SLURM_JOB_NODELIST", "n[1-"}, {"SLURM_JOB_ID", "1"}})
                .find("malformed Slurm hostlist"), std::string::npos);
  EXPECT_NE(ErrorOf({{"SLURM_STEP_ID", "0"}, {"SLURM_NODEID", "2"},
                     {"SLURM_TASKS_PER_NODE", "2(x2)"}})
                .find("outside SLURM_TASKS_PER_NODE"), std::string::npos);
  EXPECT_NE(ErrorOf({{"SLURM_STEP_ID", "0"}, {"SLURM_NODEID", "0"},
                     {"SLURM_TASKS_PER_NODE", "2(x"}})
                .find("SLURM_TASKS_PER_NODE"), std::string::npos);
}

TEST(RoleEnvironment, TasksPerNode) {
  EXPECT_EQ(ExpandTasksPerNode("2(x3),1", "V"), std::vector<int>({2, 2, 2, 1}));
  EXPECT_EQ(ExpandTasksPerNode("4", "V"), std::vector<int>({4}));
}

TEST(RoleEnvironment, SeedZeroTrainerCountIsNotANodeList) {
  EXPECT_EQ(Read({{"PADDLE_TRAINERS", "2"}}).Get(RoleField::kNodes), nullptr);
  EXPECT_EQ(Read({{"PADDLE_TRAINERS", "10.0.0.1,10.0.0.2"}}).Value(RoleField::kNodes),
            "10.0.0.1,10.0.0.2");
}

}  // namespace
}  // namespace flotilla::roles
