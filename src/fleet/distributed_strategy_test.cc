#include "flotilla/fleet/distributed_strategy.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <variant>
#include <vector>

#include "flotilla/common/error.h"
#include "flotilla/fleet/fleet.h"

namespace flotilla::fleet {
namespace {

TEST(DistributedStrategy, PaddleDefaults) {
  DistributedStrategy s;
  EXPECT_EQ(s.comm_num(), 1);
  EXPECT_TRUE(s.fuse_all_reduce_ops());
  EXPECT_EQ(s.fuse_grad_size_in_MB(), 32);
  EXPECT_FALSE(s.use_hierarchical_allreduce());
  EXPECT_FALSE(s.localsgd());
  EXPECT_EQ(s.GetInt("localsgd_configs.k_steps"), 1);
  EXPECT_EQ(s.GetInt("localsgd_configs.begin_step"), 1);
  EXPECT_EQ(s.GetInt("gradient_merge_configs.k_steps"), 1);
  EXPECT_TRUE(s.GetBool("gradient_merge_configs.avg"));
  EXPECT_EQ(s.GetInt("a_sync_configs.k_steps"), -1);
  EXPECT_EQ(s.GetInt("a_sync_configs.send_queue_size"), 16);
  EXPECT_EQ(s.GetInt("exec_strategy.num_threads"), 1);
  EXPECT_EQ(s.GetString("sparse_table_configs.table_class"), "memory");
  EXPECT_FLOAT_EQ(s.GetFloat("sparse_table_configs.admit_probability"), 1.0);
  EXPECT_NO_THROW(s.Validate());
}

TEST(DistributedStrategy, PaddleStyleAccess) {
  DistributedStrategy s;
  s.set_nccl_comm_num(2);
  s.Set("exec_strategy.num_threads", 3);
  s.Set("exec_strategy.num_iteration_per_drop_scope", 30);
  s.Set("use_hierarchical_allreduce", true);
  s.Set("localsgd_configs.k_steps", 4);
  EXPECT_EQ(s.comm_num(), 2);
  EXPECT_EQ(s.GetInt("exec_strategy.num_threads"), 3);
  EXPECT_TRUE(s.use_hierarchical_allreduce());
  EXPECT_EQ(s.GetInt("localsgd_configs.k_steps"), 4);
}

TEST(DistributedStrategy, FromTextAcceptsTheOldName) {
  auto s = DistributedStrategy::FromText(
      "nccl_comm_num: 2\nfuse_all_reduce_ops: false\nfuse_grad_size_in_MB: 16\n"
      "localsgd: true\nlocalsgd_configs { k_steps: 4 begin_step: 10 }\n"
      "exec_strategy { num_threads: 3 num_iteration_per_drop_scope: 30 }\n");
  EXPECT_EQ(s.comm_num(), 2);
  EXPECT_FALSE(s.fuse_all_reduce_ops());
  EXPECT_EQ(s.fuse_grad_size_in_MB(), 16);
  EXPECT_EQ(s.GetInt("localsgd_configs.begin_step"), 10);
  auto round = DistributedStrategy::FromText(s.ToText());
  EXPECT_EQ(round.comm_num(), 2);
  EXPECT_EQ(round.GetInt("localsgd_configs.k_steps"), 4);
}

TEST(DistributedStrategy, FieldsByPathHoldEveryType) {
  DistributedStrategy s;
  EXPECT_FALSE(s.Has("a_sync_configs.k_steps"));
  EXPECT_FALSE(s.Has("a_sync_configs"));
  s.Set("a_sync_configs.k_steps", int64_t{8});
  s.Set("sparse_table_configs.admit_probability", 0.25);
  s.Set("sparse_table_configs.click_var", "click");
  s.Set("sparse_table_configs.memory_budget_mb", int64_t{1} << 40);  // an int64 field
  s.Set("heter_configs.boundary_vars", std::vector<std::string>{"a", "b"});
  s.Set("dgc_configs.sparsity", std::vector<double>{0.5, 0.75});
  s.Set("build_strategy.fuse_bn_act_ops", true);
  EXPECT_TRUE(s.Has("a_sync_configs.k_steps"));
  EXPECT_TRUE(s.Has("a_sync_configs"));  // a group: any field of it
  EXPECT_EQ(std::get<int64_t>(s.Get("a_sync_configs.k_steps")), 8);
  EXPECT_DOUBLE_EQ(s.GetFloat("sparse_table_configs.admit_probability"), 0.25);
  EXPECT_EQ(s.GetString("sparse_table_configs.click_var"), "click");
  EXPECT_EQ(s.GetInt("sparse_table_configs.memory_budget_mb"), int64_t{1} << 40);
  EXPECT_EQ(s.GetStrings("heter_configs.boundary_vars"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(std::get<std::vector<double>>(s.Get("dgc_configs.sparsity")), (std::vector<double>{0.5, 0.75}));
  s.Set("sparse_table_configs.admit_probability", 1);  // an integer for a number field
  EXPECT_DOUBLE_EQ(s.GetFloat("sparse_table_configs.admit_probability"), 1.0);
  // What the accessors set is what the text holds, and back.
  DistributedStrategy round = DistributedStrategy::FromText(s.ToText());
  EXPECT_EQ(round.GetInt("a_sync_configs.k_steps"), 8);
  EXPECT_EQ(round.GetStrings("heter_configs.boundary_vars"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(round.GetBool("build_strategy.fuse_bn_act_ops"));
  s.Clear("a_sync_configs.k_steps");
  EXPECT_FALSE(s.Has("a_sync_configs.k_steps"));
  EXPECT_EQ(s.GetInt("a_sync_configs.k_steps"), -1);
}

TEST(DistributedStrategy, FieldsByPathRefuseWhatDoesNotFitByName) {
  DistributedStrategy s;
  const auto message = [&](auto&& f) -> std::string {
    try {
      f();
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message([&] { s.Get("a_sync_configs.no_such"); }).find("has no field 'a_sync_configs.no_such'"),
            std::string::npos);
  EXPECT_NE(message([&] { s.Set("comm_num.x", 1); }).find("'comm_num' is not a config group"), std::string::npos);
  EXPECT_NE(message([&] { s.Set("comm_num", true); }).find("DistributedStrategy.comm_num holds an integer, not a bool"),
            std::string::npos);
  EXPECT_NE(message([&] { s.Set("a_sync", 1); }).find("a_sync holds a bool, not an integer"), std::string::npos);
  EXPECT_NE(message([&] { s.Set("comm_num", 0.5); }).find("holds an integer, not a number"), std::string::npos);
  EXPECT_NE(message([&] { s.Set("comm_num", int64_t{1} << 40); }).find("outside the 32-bit range"),
            std::string::npos);
  EXPECT_NE(message([&] { s.Set("heter_configs.boundary_vars", "x"); }).find("holds a list of strings, not a string"),
            std::string::npos);
  EXPECT_NE(message([&] { s.Get("exec_strategy"); }).find("is a config group"), std::string::npos);
  EXPECT_NE(message([&] { s.GetBool("comm_num"); }).find("holds an integer, not a bool"), std::string::npos);
  EXPECT_EQ(s.comm_num(), 1);  // nothing refused was set
  EXPECT_FALSE(s.Has("comm_num"));
}

TEST(DistributedStrategy, FieldsListTheMessageInOrderWithTheirTypes) {
  const std::vector<StrategyField> top = DistributedStrategy::Fields();
  ASSERT_GE(top.size(), 20u);
  EXPECT_EQ(top[0].name, "comm_num");
  EXPECT_EQ(top[0].type, StrategyFieldType::kInt);
  const auto type_of = [&](const std::string& name) {
    for (const StrategyField& f : top) {
      if (f.name == name) return f.type;
    }
    ADD_FAILURE() << name << " not listed";
    return StrategyFieldType::kGroup;
  };
  EXPECT_EQ(type_of("a_sync"), StrategyFieldType::kBool);
  EXPECT_EQ(type_of("fuse_grad_size_in_TFLOPS"), StrategyFieldType::kFloat);
  EXPECT_EQ(type_of("a_sync_configs"), StrategyFieldType::kGroup);
  const std::vector<StrategyField> gm = DistributedStrategy::Fields("gradient_merge_configs");
  ASSERT_EQ(gm.size(), 2u);
  EXPECT_EQ(gm[0].name, "k_steps");
  EXPECT_EQ(gm[1].name, "avg");
  EXPECT_EQ(DistributedStrategy::Type("heter_configs.boundary_vars"), StrategyFieldType::kStringList);
  EXPECT_EQ(DistributedStrategy::Type("dgc_configs.sparsity"), StrategyFieldType::kFloatList);
  EXPECT_EQ(DistributedStrategy::Type("sparse_table_configs.table_class"), StrategyFieldType::kString);
  EXPECT_THROW(DistributedStrategy::Fields("comm_num"), InvalidArgument);
}

TEST(DistributedStrategy, CopiesAreIndependentAndMovedFromHoldsTheDefaults) {
  DistributedStrategy a;
  a.Set("localsgd_configs.k_steps", 4);
  DistributedStrategy b = a;
  b.Set("localsgd_configs.k_steps", 6);
  EXPECT_EQ(a.GetInt("localsgd_configs.k_steps"), 4);
  a = b;
  EXPECT_EQ(a.GetInt("localsgd_configs.k_steps"), 6);
  DistributedStrategy c = std::move(a);
  EXPECT_EQ(c.GetInt("localsgd_configs.k_steps"), 6);
  EXPECT_EQ(a.GetInt("localsgd_configs.k_steps"), 1);  // NOLINT(bugprone-use-after-move): documented
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

TEST(DistributedStrategy, LaunchBarrierOffIsAHint) {
  DistributedStrategy s = DistributedStrategy::FromText("a_sync_configs { launch_barrier: false }");
  EXPECT_NO_THROW(s.Validate());
  const std::vector<std::string> hints = s.Hints();
  ASSERT_EQ(hints.size(), 1u);
  EXPECT_NE(hints[0].find("a_sync_configs.launch_barrier=false"), std::string::npos) << hints[0];
}

TEST(DistributedStrategy, AsyncFieldsTheCommunicatorLacksAreRefusedByName) {
  EXPECT_NO_THROW(DistributedStrategy::FromText(
      "a_sync_configs { k_steps: 4 max_merge_var_num: 8 send_queue_size: 32 independent_recv_thread: true }"));
  for (const char* field : {"min_send_grad_num_before_recv: 2", "thread_pool_size: 4", "send_wait_times: 3",
                            "runtime_split_send_recv: true", "lr_decay_steps: 5"}) {
    try {
      DistributedStrategy::FromText(std::string("a_sync_configs { ") + field + " }").Validate();
      FAIL() << field << " was accepted";
    } catch (const Unimplemented& e) {
      const std::string name(field, std::string(field).find(':'));
      EXPECT_NE(std::string(e.what()).find("a_sync_configs." + name + "="), std::string::npos) << e.what();
    }
  }
}

// The message Validate throws for `text`, or "" when it accepts it.
std::string Refusal(const std::string& text) {
  try {
    DistributedStrategy::FromText(text).Validate();
  } catch (const Unimplemented& e) {
    return e.what();
  }
  return "";
}

TEST(DistributedStrategy, AppliedFieldsPassWithoutHints) {
  auto s = DistributedStrategy::FromText(
      "comm_num: 2 fuse_grad_size_in_MB: 8 localsgd: true localsgd_configs { k_steps: 4 } "
      "exec_strategy { num_threads: 2 num_iteration_per_run: 3 } a_sync: false sync_batch_norm: true");
  EXPECT_NO_THROW(s.Validate());
  EXPECT_TRUE(s.Hints().empty());
}

TEST(DistributedStrategy, HintsPassAndAreNamedWithWhy) {
  auto s = DistributedStrategy::FromText(
      "auto: true cudnn_exhaustive_search: false conv_workspace_size_limit: 1000 sync_nccl_allreduce: false "
      "fuse_grad_size_in_TFLOPS: 0.5 recompute: true build_strategy { fuse_bn_act_ops: true }");
  EXPECT_NO_THROW(s.Validate());
  const std::vector<std::string> hints = s.Hints();
  ASSERT_EQ(hints.size(), 6u);  // sync_nccl_allreduce is applied (collective_pass.cc)
  EXPECT_EQ(hints[0], "DistributedStrategy.auto=true has no effect in Flotilla: Flotilla applies the fields set; "
                      "nearest: set them yourself");
  EXPECT_NE(hints[2].find("conv_workspace_size_limit=1000 has no effect in Flotilla: there is no cuDNN"),
            std::string::npos) << hints[2];
  EXPECT_NE(hints[3].find("fuse_grad_size_in_TFLOPS=0.5"), std::string::npos) << hints[3];
  EXPECT_NE(hints[5].find("build_strategy.fuse_bn_act_ops=true"), std::string::npos) << hints[5];
  // Each hint once per process; the defaults give none.
  DistributedStrategy other;
  other.Set("conv_workspace_size_limit", 1000);
  EXPECT_EQ(other.NewHints().size(), 1u);
  EXPECT_TRUE(other.NewHints().empty());
  other.Set("conv_workspace_size_limit", 4000);
  EXPECT_TRUE(other.Hints().empty());
}

TEST(DistributedStrategy, UnimplementedFieldsLoadButAreRefusedWhenAppliedNamingTheNearestOption) {
  EXPECT_NO_THROW(DistributedStrategy::FromText("amp: true dgc: true pipeline: true"));  // a Paddle prototxt loads
  EXPECT_NE(Refusal("amp: true").find("DistributedStrategy.amp=true is not applied by Flotilla; "
                                     "nearest: float32 training (the CPU backend has no float16 kernels)"),
            std::string::npos);
  EXPECT_NE(Refusal("dgc: true").find("dgc=true is not applied by Flotilla; nearest: fuse_all_reduce_ops"), std::string::npos);
  EXPECT_NE(Refusal("lars: true").find("the Momentum optimizer"), std::string::npos);
  EXPECT_NE(Refusal("fp16_compress: true").find("fp16_compress=true"), std::string::npos);
  EXPECT_NE(Refusal("fetch_frequency: 2").find("fetch_frequency=2 is not applied by Flotilla; leave it at 1 and "
                                               "fetch every N steps"), std::string::npos);
  EXPECT_NE(Refusal("exec_strategy { use_thread_barrier: true }").find("exec_strategy.use_thread_barrier=true"),
            std::string::npos);
  EXPECT_NE(Refusal("build_strategy { gradient_scale_strategy: 1 }").find("gradient_scale_strategy=1"),
            std::string::npos);
  // Configs of a refused option configure nothing while it is off.
  EXPECT_EQ(Refusal("amp_configs { init_loss_scaling: 1024 } recompute_configs { checkpoints: 'x' } "
                    "pipeline_configs { micro_batch: 4 } amp: false"), "");
}

TEST(DistributedStrategy, ExecStrategyCountsOutOfRangeAreNamed) {
  try {
    DistributedStrategy::FromText("exec_strategy { num_iteration_per_run: 0 }");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("exec_strategy.num_iteration_per_run=0 must be at least 1"),
              std::string::npos) << e.what();
  }
}

TEST(DistributedStrategy, ExecStrategyBecomesTheProgramsRunSettings) {
  Program program;
  DistributedStrategy s;
  s.Set("exec_strategy.num_iteration_per_run", 3);
  ApplyExecutionStrategy(s, program);
  EXPECT_EQ(program.run_settings().iterations, 3);
  EXPECT_EQ(program.run_settings().drop_scope_every, 0);  // unset: kept, not Paddle's default 10
  s.Set("exec_strategy.num_iteration_per_drop_scope", 5);
  ApplyExecutionStrategy(s, program);
  EXPECT_EQ(program.run_settings().drop_scope_every, 5);
  ApplyExecutionStrategy(DistributedStrategy{}, program);
  EXPECT_EQ(program.run_settings().iterations, 1);
  EXPECT_EQ(program.run_settings().drop_scope_every, 0);
  // Refused or out of range: named, and the program keeps its settings.
  s.Set("exec_strategy.use_thread_barrier", true);
  EXPECT_THROW(ApplyExecutionStrategy(s, program), Unimplemented);
  s.Set("exec_strategy.use_thread_barrier", false);
  s.Set("exec_strategy.num_iteration_per_run", 0);
  EXPECT_THROW(ApplyExecutionStrategy(s, program), InvalidArgument);
  s.Set("exec_strategy.num_iteration_per_run", 2);
  s.Set("fetch_frequency", 2);
  EXPECT_THROW(ApplyExecutionStrategy(s, program), Unimplemented);
  EXPECT_EQ(program.run_settings().iterations, 1);
}

TEST(DistributedStrategy, FuseParameterMemorySizeFlagSizesBucketsUnlessTheStrategyDoes) {
  setenv("FLAGS_fuse_parameter_memory_size", "15.5", 1);
  DistributedStrategy unset;
  unset.HonourPaddleFlags();
  EXPECT_EQ(unset.fuse_grad_size_in_MB(), 16);
  DistributedStrategy mine;
  mine.set_fuse_grad_size_in_MB(4);
  mine.HonourPaddleFlags();
  EXPECT_EQ(mine.fuse_grad_size_in_MB(), 4);
  setenv("FLAGS_fuse_parameter_memory_size", "lots", 1);
  DistributedStrategy bad;
  EXPECT_THROW(bad.HonourPaddleFlags(), InvalidArgument);
  unsetenv("FLAGS_fuse_parameter_memory_size");
}

TEST(DistributedStrategy, FaultToleranceIsNoneOrStepAndTheLauncherVariableSetsIt) {
  EXPECT_EQ(DistributedStrategy().fault_tolerance(), "none");
  EXPECT_EQ(DistributedStrategy::FromText("fault_tolerance: 'step'").fault_tolerance(), "step");
  try {
    DistributedStrategy::FromText("fault_tolerance: 'restart'");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("fault_tolerance 'restart' is not none or step"),
              std::string::npos) << e.what();
  }
  setenv("FLOTILLA_FAULT_TOLERANCE", "step", 1);
  DistributedStrategy unset;
  unset.HonourPaddleFlags();
  EXPECT_EQ(unset.fault_tolerance(), "step");
  DistributedStrategy mine;
  mine.set_fault_tolerance("none");
  mine.HonourPaddleFlags();
  EXPECT_EQ(mine.fault_tolerance(), "none");
  unsetenv("FLOTILLA_FAULT_TOLERANCE");
}

}  // namespace
}  // namespace flotilla::fleet
