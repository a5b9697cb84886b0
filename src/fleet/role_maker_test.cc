#include "flotilla/fleet/role_maker.h"

#include <cstdlib>
#include <map>
#include <optional>

#include <gtest/gtest.h>

#include "flotilla/common/error.h"
#include "flotilla/fleet/fleet.h"

namespace flotilla::fleet {
namespace {

using Vars = std::map<std::string, std::string>;

// Sets variables for one test and restores them afterwards; every variable
// a role maker reads is cleared first so the host environment cannot leak in.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::map<std::string, std::string>& vars) {
    for (const char* name : kAll) Save(name), unsetenv(name);
    for (const auto& [k, v] : vars) Save(k), setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : saved_) {
      if (v) setenv(k.c_str(), v->c_str(), 1); else unsetenv(k.c_str());
    }
  }

 private:
  void Save(const std::string& k) {
    if (saved_.count(k)) return;
    const char* v = getenv(k.c_str());
    saved_[k] = v ? std::optional<std::string>(v) : std::nullopt;
  }
  static constexpr const char* kAll[] = {
      "PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "PADDLE_TRAINER_ENDPOINTS",
      "PADDLE_CURRENT_ENDPOINT", "PADDLE_MASTER", "TRAINING_ROLE", "PADDLE_PSERVERS_IP_PORT_LIST",
      "PADDLE_PORT", "POD_IP", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
      "OMPI_COMM_WORLD_LOCAL_RANK", "FLOTILLA_STORE", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE",
      "FLOTILLA_JOB_ID", "FLOTILLA_HOST_ID", "PADDLE_JOB_ID", "PADDLE_RANK_IN_NODE",
      "PADDLE_LOCAL_SIZE", "PADDLE_NNODES", "PADDLE_ELASTIC_JOB_ID", "PADDLE_TRAINERS",
"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
      "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT", "JOB_COMPLETION_INDEX", "SLURM_PROCID",
      "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_NNODES",
      "SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES", "SLURM_TASKS_PER_NODE",
      "SLURM_STEP_TASKS_PER_NODE", "SLURM_JOB_ID", "SLURM_STEP_NODELIST",
      "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURMD_NODENAME", "SLURM_STEP_ID", "SLURM_STEPID", "OMPI_COMM_WORLD_LOCAL_SIZE",
      "PMIX_RANK"};
  std::map<std::string, std::optional<std::string>> saved_;
};

template <typename Fn>
std::string ErrorOf(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PaddleCloudRoleMaker, CollectiveReadsTheContract) {
  ScopedEnv env({{"PADDLE_TRAINER_ID", "1"}, {"PADDLE_TRAINERS_NUM", "2"},
                 {"PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:6170,127.0.0.1:6171"},
                 {"PADDLE_CURRENT_ENDPOINT", "127.0.0.1:6171"}, {"PADDLE_MASTER", "127.0.0.1:6000"}});
  PaddleCloudRoleMaker role(true);
  EXPECT_TRUE(role.is_worker());
  EXPECT_FALSE(role.is_server());
  EXPECT_FALSE(role.is_first_worker());
  EXPECT_EQ(role.worker_index(), 1);
  EXPECT_EQ(role.worker_num(), 2);
  EXPECT_EQ(role.worker_endpoints().size(), 2u);
  EXPECT_EQ(role.current_endpoint(), "127.0.0.1:6171");
  EXPECT_EQ(role.info().store_address, "127.0.0.1:6000");
}

TEST(PaddleCloudRoleMaker, CollectiveWorldSizeFromTheEndpointList) {
  // Paddle's collective role maker counts PADDLE_TRAINER_ENDPOINTS when no
  // world size is given.
  {
    ScopedEnv env({{"PADDLE_TRAINER_ID", "1"}, {"PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:36001,127.0.0.1:36002"}});
    PaddleCloudRoleMaker role(true);
    EXPECT_EQ(role.worker_index(), 1);
    EXPECT_EQ(role.worker_num(), 2);
  }
  ScopedEnv env({{"PADDLE_TRAINER_ID", "2"}, {"PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:36001,127.0.0.1:36002"}});
  EXPECT_NE(ErrorOf([] { PaddleCloudRoleMaker r(true); }).find("PADDLE_TRAINER_ENDPOINTS=2 endpoints"),
            std::string::npos);
}

TEST(PaddleCloudRoleMaker, TorchStyleVariablesWithoutALauncher) {
  ScopedEnv env({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"},
                 {"MASTER_PORT", "29411"}});
  EXPECT_TRUE(RoleInEnvironment());
  PaddleCloudRoleMaker role(true);
  EXPECT_EQ(role.worker_index(), 1);
  EXPECT_EQ(role.worker_num(), 2);
  EXPECT_EQ(role.info().store_address, "127.0.0.1:29411");
  EXPECT_TRUE(role.info().host_store) << "no launcher hosts a torchrun-style master";
}

TEST(PaddleCloudRoleMaker, SlurmTaskWithoutALauncher) {
  ScopedEnv env({{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "4"},
                 {"SLURM_JOB_ID", "77"},
                 {"SLURM_JOB_NODELIST", "fn[1-2]"}, {"SLURMD_NODENAME", "fn2"}});
  PaddleCloudRoleMaker role(true);
  EXPECT_EQ(role.worker_index(), 2);
  EXPECT_EQ(role.worker_num(), 4);
  EXPECT_EQ(role.info().store_address, "fn1:15077");
  EXPECT_TRUE(role.info().host_store);
  EXPECT_EQ(role.info().job_id, "77");
  EXPECT_EQ(role.info().host_id, "fn2");
}

TEST(PaddleCloudRoleMaker, LauncherVariablesWinAndItsStoreIsNotHosted) {
  ScopedEnv env({{"PADDLE_TRAINER_ID", "1"}, {"PADDLE_TRAINERS_NUM", "2"},
                 {"PADDLE_MASTER", "127.0.0.1:6000"}, {"SLURM_JOB_ID", "77"},
                 {"SLURM_JOB_NODELIST", "fn1"}});
  PaddleCloudRoleMaker role(true);
  EXPECT_EQ(role.info().store_address, "127.0.0.1:6000");
  EXPECT_FALSE(role.info().host_store);
}

TEST(PaddleCloudRoleMaker, ConflictingRanksAreAnError) {
  ScopedEnv env({{"PADDLE_TRAINER_ID", "1"}, {"PADDLE_TRAINERS_NUM", "2"}, {"RANK", "0"}});
  const std::string e = ErrorOf([] { PaddleCloudRoleMaker r(true); });
  EXPECT_NE(e.find("PADDLE_TRAINER_ID=1 (Paddle) but RANK=0 (PyTorch)"), std::string::npos) << e;
}

TEST(PaddleCloudRoleMaker, MpiAloneMeetsInAFileStore) {
  ScopedEnv env({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                 {"OMPI_MCA_ess_base_jobid", "42"}});
  PaddleCloudRoleMaker role(true);
  EXPECT_EQ(role.worker_index(), 1);
  EXPECT_NE(role.info().store_address.find("file:"), std::string::npos);
  EXPECT_NE(role.info().store_address.find("flotilla-mpi-42"), std::string::npos);
}

TEST(PaddleCloudRoleMaker, MissingOrMalformedVariablesAreNamed) {
  {
    ScopedEnv env(Vars{{"PADDLE_TRAINERS_NUM", "2"}});
    EXPECT_NE(ErrorOf([] { PaddleCloudRoleMaker r(true); }).find("PADDLE_TRAINER_ID"), std::string::npos);
  }
  {
    ScopedEnv env({{"PADDLE_TRAINER_ID", "0"}, {"PADDLE_TRAINERS_NUM", "two"}});
    EXPECT_NE(ErrorOf([] { PaddleCloudRoleMaker r(true); }).find("PADDLE_TRAINERS_NUM"), std::string::npos);
  }
  {
    ScopedEnv env({{"PADDLE_TRAINER_ID", "2"}, {"PADDLE_TRAINERS_NUM", "2"}});
    EXPECT_NE(ErrorOf([] { PaddleCloudRoleMaker r(true); }).find("PADDLE_TRAINER_ID=2"), std::string::npos);
  }
  {
    ScopedEnv env({{"PADDLE_TRAINER_ID", "0"}, {"PADDLE_TRAINERS_NUM", "2"},
                   {"PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:1,nonsense"}});
    EXPECT_NE(ErrorOf([] { PaddleCloudRoleMaker r(true); }).find("PADDLE_TRAINER_ENDPOINTS"), std::string::npos);
  }
  {
    ScopedEnv env({{"PADDLE_TRAINER_ID", "0"}, {"PADDLE_TRAINERS_NUM", "3"},
                   {"PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:1,127.0.0.1:2"}});
    EXPECT_NE(ErrorOf([] { PaddleCloudRoleMaker r(true); }).find("lists 2 endpoints"), std::string::npos);
  }
}

TEST(PaddleCloudRoleMaker, ParameterServerRoles) {
  const std::map<std::string, std::string> common = {
      {"PADDLE_PSERVERS_IP_PORT_LIST", "127.0.0.1:7000,127.0.0.1:7001"}, {"PADDLE_TRAINERS_NUM", "2"}};
  {
    auto vars = common;
    vars.insert({{"TRAINING_ROLE", "PSERVER"}, {"POD_IP", "127.0.0.1"}, {"PADDLE_PORT", "7001"}});
    ScopedEnv env(vars);
    PaddleCloudRoleMaker role(false);
    EXPECT_TRUE(role.is_server());
    EXPECT_EQ(role.server_index(), 1);
    EXPECT_EQ(role.server_num(), 2);
    EXPECT_EQ(role.current_endpoint(), "127.0.0.1:7001");
  }
  {
    auto vars = common;
    vars.insert({{"TRAINING_ROLE", "TRAINER"}, {"PADDLE_TRAINER_ID", "0"}});
    ScopedEnv env(vars);
    PaddleCloudRoleMaker role(false);
    EXPECT_TRUE(role.is_first_worker());
    EXPECT_EQ(role.worker_num(), 2);
  }
  {
    auto vars = common;
    vars.insert({{"TRAINING_ROLE", "PSERVER"}, {"POD_IP", "127.0.0.1"}, {"PADDLE_PORT", "7005"}});
    ScopedEnv env(vars);
    EXPECT_NE(ErrorOf([] { PaddleCloudRoleMaker r(false); }).find("PADDLE_PSERVERS_IP_PORT_LIST"), std::string::npos);
  }
  {
    auto vars = common;
    vars.insert({{"TRAINING_ROLE", "BOSS"}});
    ScopedEnv env(vars);
    EXPECT_NE(ErrorOf([] { PaddleCloudRoleMaker r(false); }).find("TRAINING_ROLE"), std::string::npos);
  }
  {
    ScopedEnv env({{"TRAINING_ROLE", "TRAINER"}, {"PADDLE_TRAINERS_NUM", "2"}});
    EXPECT_NE(ErrorOf([] { PaddleCloudRoleMaker r(false); }).find("PADDLE_PSERVERS_IP_PORT_LIST"), std::string::npos);
  }
}

TEST(UserDefinedRoleMaker, WorkerAndServer) {
  UserDefinedRoleMaker worker(1, Role::kWorker, 3);
  EXPECT_EQ(worker.worker_index(), 1);
  EXPECT_EQ(worker.worker_num(), 3);
  EXPECT_TRUE(worker.info().is_collective);
  UserDefinedRoleMaker server(0, Role::kServer, 2, {"127.0.0.1:1", "127.0.0.1:2"});
  EXPECT_TRUE(server.is_server());
  EXPECT_EQ(server.current_endpoint(), "127.0.0.1:1");
  EXPECT_NE(ErrorOf([] { UserDefinedRoleMaker r(3, Role::kWorker, 3); }).find("current_id=3"), std::string::npos);
  EXPECT_NE(ErrorOf([] { UserDefinedRoleMaker r(0, Role::kWorker, 0); }).find("worker_num=0"), std::string::npos);
}

TEST(UserDefinedRoleMaker, PaddleArgumentsInferTheWorkerCount) {
  UserDefinedRoleMaker ps(UserDefinedRole{.current_id = 1, .role = Role::kWorker,
                                          .worker_endpoints = {"127.0.0.1:6003", "127.0.0.1:6004"},
                                          .server_endpoints = {"127.0.0.1:6001"}});
  EXPECT_EQ(ps.worker_num(), 2);
  EXPECT_FALSE(ps.info().is_collective);
  EXPECT_EQ(ps.current_endpoint(), "127.0.0.1:6004");
  EXPECT_EQ(ps.server_num(), 1);
  UserDefinedRoleMaker collective(UserDefinedRole{.current_id = 0, .is_collective = true,
                                                  .worker_endpoints = {"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"},
                                                  .server_endpoints = {"127.0.0.1:9"}});
  EXPECT_EQ(collective.worker_num(), 3);
  EXPECT_TRUE(collective.info().is_collective);
  EXPECT_EQ(collective.server_num(), 0) << "a collective role ignores server endpoints";
  const std::string disagree = ErrorOf([] {
    UserDefinedRoleMaker r(UserDefinedRole{.worker_num = 3, .worker_endpoints = {"127.0.0.1:1", "127.0.0.1:2"}});
  });
  EXPECT_NE(disagree.find("worker_num=3 but worker_endpoints lists 2"), std::string::npos) << disagree;
  EXPECT_NE(ErrorOf([] { UserDefinedRoleMaker r(UserDefinedRole{}); }).find("give worker_num or worker_endpoints"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] {
              UserDefinedRoleMaker r(UserDefinedRole{.role = Role::kServer, .worker_num = 1, .is_collective = true});
            }).find("collective job has no servers"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { UserDefinedRoleMaker r(UserDefinedRole{.worker_endpoints = {"nonsense"}}); })
                .find("worker_endpoints"),
            std::string::npos);
}

TEST(PaddleCloudRoleMaker, NonDistributedFallbackAsPaddle) {
  {
    ScopedEnv env(Vars{});
    PaddleCloudRoleMaker role(true, /*non_distributed_fallback=*/true);
    EXPECT_TRUE(role.info().non_distributed);
    EXPECT_EQ(role.worker_num(), 1);
    EXPECT_EQ(role.worker_endpoints(), std::vector<std::string>{"127.0.0.1:6170"});
    PaddleCloudRoleMaker ps(false, true);
    EXPECT_TRUE(ps.info().non_distributed);
    EXPECT_FALSE(ps.info().is_collective);
    EXPECT_TRUE(ps.is_first_worker());
    EXPECT_EQ(ps.server_num(), 0);
  }
  {
    // Paddle's test_fleet_base_2: a trainer role but no server list.
    ScopedEnv env({{"TRAINING_ROLE", "TRAINER"}, {"PADDLE_TRAINER_ID", "1"}, {"PADDLE_TRAINERS_NUM", "1"}});
    PaddleCloudRoleMaker ps(false, true);
    EXPECT_TRUE(ps.info().non_distributed);
    EXPECT_EQ(ps.worker_num(), 1);
    EXPECT_EQ(ps.server_num(), 0);
    EXPECT_NE(ErrorOf([] { PaddleCloudRoleMaker strict(false); }).find("PADDLE_PSERVERS_IP_PORT_LIST"),
              std::string::npos);
  }
  {
    // Paddle's test_fleet_base environment: one endpoint, no rank.
    ScopedEnv env({{"PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:36000"}, {"PADDLE_TRAINERS_NUM", "2"}});
    PaddleCloudRoleMaker role(true, true);
    EXPECT_FALSE(role.info().non_distributed);
    EXPECT_EQ(role.worker_num(), 1);
    EXPECT_EQ(role.current_endpoint(), "127.0.0.1:36000");
    EXPECT_NE(ErrorOf([] { PaddleCloudRoleMaker r(true); }).find("PADDLE_TRAINER_ID"), std::string::npos)
        << "without the fallback the rank is required";
  }
  {
    ScopedEnv env(Vars{{"PADDLE_TRAINER_ENDPOINTS", "127.0.0.1:1,127.0.0.1:2"}});
    EXPECT_NE(ErrorOf([] { PaddleCloudRoleMaker r(true, true); }).find("PADDLE_TRAINER_ID"), std::string::npos)
        << "several workers need each one's rank";
  }
  {
    // As Paddle's _ps_env: no server list is a job without servers, whatever
    // TRAINING_ROLE says; only the strict role maker asks for the list.
    ScopedEnv env({{"TRAINING_ROLE", "TRAINER"}, {"PADDLE_TRAINERS_NUM", "2"}});
    EXPECT_TRUE(PaddleCloudRoleMaker(false, true).info().non_distributed);
    EXPECT_NE(ErrorOf([] { PaddleCloudRoleMaker r(false); }).find("PADDLE_PSERVERS_IP_PORT_LIST"),
              std::string::npos);
  }
}

TEST(FileShard, ContiguousBlocksTheFirstOnesLonger) {
  const std::vector<std::string> five = {"a", "b", "c", "d", "e"};
  EXPECT_EQ(FileShard(five, 0, 2), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(FileShard(five, 1, 2), (std::vector<std::string>{"d", "e"}));
  EXPECT_EQ(FileShard({"a", "b"}, 2, 3), std::vector<std::string>{});
  EXPECT_EQ(FileShard({}, 0, 1), std::vector<std::string>{});
  for (int n = 1; n <= 6; ++n) {
    std::vector<std::string> joined;
    for (int i = 0; i < n; ++i) {
      for (auto& f : FileShard(five, i, n)) joined.push_back(f);
    }
    EXPECT_EQ(joined, five) << n << " workers";
  }
  EXPECT_NE(ErrorOf([] { FileShard({"a"}, 2, 2); }).find("worker_index=2"), std::string::npos);
}

TEST(Fleet, InitAgainReinitialisesAndCollectiveCallsActAsPaddle) {
  Fleet fleet;
  fleet.init(UserDefinedRoleMaker(0, Role::kServer, 2, {"127.0.0.1:1"}));
  EXPECT_TRUE(fleet.is_server());
  fleet.init(UserDefinedRoleMaker(0, Role::kWorker, 1));
  EXPECT_TRUE(fleet.is_first_worker());
  EXPECT_EQ(fleet.role().server_endpoints.size(), 0u);
  const std::string e = ErrorOf([&] { fleet.init_worker(); });
  EXPECT_NE(e.find("Fleet can not find suitable runtime handler"), std::string::npos) << e;
  EXPECT_NE(ErrorOf([&] { fleet.stop_worker(); }).find("stop_worker"), std::string::npos);
  {
    ScopedEnv env(Vars{});
    fleet.init(PaddleCloudRoleMaker(false, true));
  }
  EXPECT_TRUE(fleet.role().non_distributed);
  EXPECT_EQ(ErrorOf([&] { fleet.init_worker(); fleet.stop_worker(); fleet.run_server(); }), "")
      << "a non-distributed fleet warns and goes on";
}

TEST(MPISymetricRoleMaker, ReadsOpenMpiVariables) {
  {
    ScopedEnv env({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_MCA_ess_base_jobid", "42"}});
    MPISymetricRoleMaker role;
    EXPECT_EQ(role.worker_index(), 1);
    EXPECT_EQ(role.worker_num(), 2);
    EXPECT_EQ(role.info().store_address.rfind("file:", 0), 0u);
    EXPECT_NE(role.info().store_address.find("flotilla-mpi-42"), std::string::npos);
  }
  {
    ScopedEnv env({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
    EXPECT_NE(ErrorOf([] { MPISymetricRoleMaker r; }).find("OMPI_COMM_WORLD_LOCAL_RANK"), std::string::npos);
  }
  {
    ScopedEnv env(Vars{{"OMPI_COMM_WORLD_SIZE", "2"}});
    EXPECT_NE(ErrorOf([] { MPISymetricRoleMaker r; }).find("OMPI_COMM_WORLD_RANK"), std::string::npos);
  }
}

}  // namespace
}  // namespace flotilla::fleet
