#include "flotilla/fleet/distributed_strategy.h"

#include <gtest/gtest.h>

#include "flotilla/common/error.h"

namespace flotilla::fleet {
namespace {

TEST(DistributedStrategy, PaddleDefaults) {
  DistributedStrategy s;
  EXPECT_EQ(s.comm_num(), 1);
  EXPECT_TRUE(s.fuse_all_reduce_ops());
  EXPECT_EQ(s.fuse_grad_size_in_MB(), 32);
  EXPECT_FALSE(s.use_hierarchical_allreduce());
  EXPECT_FALSE(s.localsgd());
  EXPECT_EQ(s.localsgd_configs().k_steps(), 1);
  EXPECT_EQ(s.localsgd_configs().begin_step(), 1);
  EXPECT_EQ(s.gradient_merge_configs().k_steps(), 1);
  EXPECT_TRUE(s.gradient_merge_configs().avg());
  EXPECT_EQ(s.a_sync_configs().k_steps(), -1);
  EXPECT_EQ(s.a_sync_configs().send_queue_size(), 16);
  EXPECT_EQ(s.exec_strategy().num_threads(), 1);
  EXPECT_NO_THROW(s.Validate());
}

TEST(DistributedStrategy, PaddleStyleAccess) {
  DistributedStrategy s;
  s.set_nccl_comm_num(2);
  s.exec_strategy().set_num_threads(3);
  s.exec_strategy().set_num_iteration_per_drop_scope(30);
  s->set_use_hierarchical_allreduce(true);
  s.localsgd_configs().set_k_steps(4);
  EXPECT_EQ(s.comm_num(), 2);
  EXPECT_EQ(s.exec_strategy().num_threads(), 3);
  EXPECT_TRUE(s.use_hierarchical_allreduce());
  EXPECT_EQ(s.localsgd_configs().k_steps(), 4);
}

TEST(DistributedStrategy, FromTextAcceptsTheOldName) {
  auto s = DistributedStrategy::FromText(
      "nccl_comm_num: 2\nfuse_all_reduce_ops: false\nfuse_grad_size_in_MB: 16\n"
      "localsgd: true\nlocalsgd_configs { k_steps: 4 begin_step: 10 }\n"
      "exec_strategy { num_threads: 3 num_iteration_per_drop_scope: 30 }\n");
  EXPECT_EQ(s.comm_num(), 2);
  EXPECT_FALSE(s.fuse_all_reduce_ops());
  EXPECT_EQ(s.fuse_grad_size_in_MB(), 16);
  EXPECT_EQ(s.localsgd_configs().begin_step(), 10);
  auto round = DistributedStrategy::FromText(s.ToText());
  EXPECT_EQ(round.comm_num(), 2);
  EXPECT_EQ(round.localsgd_configs().k_steps(), 4);
}

TEST(DistributedStrategy, UnknownFieldIsNamed) {
  try {
    DistributedStrategy::FromText("comm_num: 1\nfuse_everything: true\n", "my.prototxt");
    FAIL() << "expected an error";
  } catch (const InvalidArgument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("fuse_everything"), std::string::npos) << msg;
    EXPECT_NE(msg.find("my.prototxt"), std::string::npos) << msg;
    EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;
  }
}

TEST(DistributedStrategy, OutOfRangeValuesAreNamed) {
  EXPECT_THROW(DistributedStrategy::FromText("comm_num: 0"), InvalidArgument);
  try {
    DistributedStrategy::FromText("localsgd_configs { k_steps: 0 }");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("localsgd_configs.k_steps"), std::string::npos);
  }
  EXPECT_THROW(DistributedStrategy::FromText("localsgd: true gradient_merge: true"), InvalidArgument);
  EXPECT_THROW(DistributedStrategy::FromTextFile("/nonexistent/strategy.prototxt"), Error);
}

TEST(DistributedStrategy, AsyncFieldsTheCommunicatorLacksAreRefusedByName) {
  EXPECT_NO_THROW(DistributedStrategy::FromText(
      "a_sync_configs { k_steps: 4 max_merge_var_num: 8 send_queue_size: 32 independent_recv_thread: true }"));
  for (const char* field : {"min_send_grad_num_before_recv: 2", "thread_pool_size: 4", "send_wait_times: 3",
                            "runtime_split_send_recv: true", "launch_barrier: false", "lr_decay_steps: 5"}) {
    try {
      DistributedStrategy::FromText(std::string("a_sync_configs { ") + field + " }");
      FAIL() << field << " was accepted";
    } catch (const Unimplemented& e) {
      const std::string name(field, std::string(field).find(':'));
      EXPECT_NE(std::string(e.what()).find("a_sync_configs." + name + "="), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace flotilla::fleet
