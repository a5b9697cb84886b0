// Data-parallel training with fleet equals single-process training on the
// combined batch; LocalSGD and fusion behave as the strategy says.
#include <algorithm>
#include <cstdio>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "fleet_test_util.h"
#include "flotilla/common/strings.h"

namespace flotilla::fleet::testing {
namespace {

constexpr float kLr = 0.01f;
constexpr int kSteps = 20;
constexpr int64_t kGlobalBatch = 16;

struct RunResult {
  Params initial;                   // rank 0 after startup
  std::vector<Params> final_params;  // per rank
  int64_t allreduce_calls = 0;      // rank 0's training group
  size_t buckets = 0;
  std::string backend;               // rank 0's training group
};

// Trains `steps` steps on `n` ranks; with gradient merge k, each step a rank
// takes one of the k*n equal chunks of global batch step/k.
RunResult TrainDistributed(int n, const MlpShape& shape, const DistributedStrategy& strategy,
                           int steps, std::function<std::string(int)> host_of = nullptr) {
  RunResult result;
  result.final_params.resize(n);
  int k = strategy.gradient_merge() ? static_cast<int>(strategy.GetInt("gradient_merge_configs.k_steps")) : 1;
  int64_t chunk = kGlobalBatch / (k * n);
  std::mutex mu;
  RunRanks(n, [&](int rank, Fleet& fleet) {
    Model m = BuildMlp(shape, kLr, &fleet, strategy);
    Executor exe;
    Scope scope;
    exe.Run(*m.startup, {}, {}, &scope);
    if (rank == 0) result.initial = Snapshot(scope, m.params);
    for (int s = 0; s < steps; ++s) {
      int64_t begin = ((s % k) * n + rank) * chunk;
      exe.Run(*m.main, BatchRows(shape, s / k, kGlobalBatch, begin, begin + chunk), {m.loss.name()}, &scope);
    }
    std::lock_guard<std::mutex> lock(mu);
    result.final_params[rank] = Snapshot(scope, m.params);
    if (rank == 0) {
      result.allreduce_calls = fleet.training_group()->stats().allreduce_calls;
      result.buckets = m.dist->buckets().size();
      result.backend = fleet.training_group()->backend();
    }
  }, std::move(host_of));
  return result;
}

// One process on the whole batch, from the same initial parameters.
Params TrainSingle(const MlpShape& shape, const Params& initial, int steps) {
  Model m = BuildMlp(shape, kLr, nullptr);
  Executor exe;
  Scope scope;
  exe.Run(*m.startup, {}, {}, &scope);
  Restore(scope, initial);
  for (int s = 0; s < steps; ++s) {
    exe.Run(*m.main, BatchRows(shape, s, kGlobalBatch, 0, kGlobalBatch), {m.loss.name()}, &scope);
  }
  return Snapshot(scope, m.params);
}

// Returns the backend rank 0 trained with.
std::string ExpectEquivalent(const char* name, int n, const DistributedStrategy& strategy,
                             std::function<std::string(int)> host_of = nullptr, MlpShape shape = {}) {
  RunResult dist = TrainDistributed(n, shape, strategy, kSteps, std::move(host_of));
  int k = strategy.gradient_merge() ? static_cast<int>(strategy.GetInt("gradient_merge_configs.k_steps")) : 1;
  Params single = TrainSingle(shape, dist.initial, kSteps / k);
  for (int r = 0; r < n; ++r) {
    float diff = MaxAbsDiff(dist.final_params[r], single);
    std::printf("[equivalence] %s rank %d: max |param - single| = %.3g\n", name, r, diff);
    EXPECT_LT(diff, 1e-5f) << name << " rank " << r;
  }
  // The comparison can fail: training moved the parameters well beyond 1e-5.
  EXPECT_GT(MaxAbsDiff(dist.initial, single), 1e-3f);
  return dist.backend;
}

TEST(FleetEquivalence, FusedOneCommunicator) {
  DistributedStrategy s;
  ExpectEquivalent("fused comm_num=1", 2, s);
}

TEST(FleetEquivalence, UnfusedOneCommunicator) {
  DistributedStrategy s;
  s.set_fuse_all_reduce_ops(false);
  ExpectEquivalent("unfused comm_num=1", 2, s);
}

TEST(FleetEquivalence, FusedTwoCommunicators) {
  DistributedStrategy s;
  s.set_comm_num(2);
  s.set_fuse_grad_size_in_MB(1);
  ExpectEquivalent("fused comm_num=2", 2, s);
}

TEST(FleetEquivalence, UnfusedTwoCommunicators) {
  DistributedStrategy s;
  s.set_nccl_comm_num(2);
  s.set_fuse_all_reduce_ops(false);
  ExpectEquivalent("unfused comm_num=2", 2, s);
}

TEST(FleetEquivalence, HierarchicalTwoHostsOfTwo) {
  DistributedStrategy s;
  s.set_use_hierarchical_allreduce(true);
  s.Set("hierarchical_allreduce_inter_nranks", 2);  // ranks 0,1 on host0; 2,3 on host1
  EXPECT_EQ(ExpectEquivalent("hierarchical 2x2", 4, s), "hierarchical");
}

DistributedStrategy GradientMergeK2() {
  DistributedStrategy s;
  s.set_gradient_merge(true);
  s.Set("gradient_merge_configs.k_steps", 2);
  return s;
}

TEST(FleetEquivalence, GradientMerge) { ExpectEquivalent("gradient merge k=2", 2, GradientMergeK2()); }

// `shape`'s model trained plainly and with gradient merge.
void ExpectEquivalentWithAndWithoutMerge(const std::string& name, const MlpShape& shape) {
  ExpectEquivalent(name.c_str(), 2, DistributedStrategy(), nullptr, shape);
  ExpectEquivalent((name + ", gradient merge k=2").c_str(), 2, GradientMergeK2(), nullptr, shape);
}

// An is_sparse embedding's SelectedRows gradient is all-reduced as a dense
// gradient (as DDP does for dense embeddings); rows no rank touched stay.
TEST(FleetEquivalence, SparseEmbeddingGradients) {
  MlpShape shape;
  shape.vocab = 11;
  ExpectEquivalentWithAndWithoutMerge("sparse embedding", shape);
}

// Weight decay reads the all-reduced (or merged) gradient, not one rank's.
TEST(FleetEquivalence, WeightDecay) {
  MlpShape shape;
  shape.l2_decay = 0.5f;
  ExpectEquivalentWithAndWithoutMerge("L2 decay", shape);
}

TEST(FleetLocalSGD, AveragesEveryKSteps) {
  DistributedStrategy s;
  s.set_localsgd(true);
  s.Set("localsgd_configs.k_steps", 4);
  MlpShape shape;
  const int n = 2, steps = 20;
  std::vector<std::vector<Params>> per_step(n, std::vector<Params>(steps));
  std::vector<int64_t> calls(n);
  std::vector<size_t> buckets(n);
  RunRanks(n, [&](int rank, Fleet& fleet) {
    Model m = BuildMlp(shape, kLr, &fleet, s);
    Executor exe;
    Scope scope;
    exe.Run(*m.startup, {}, {}, &scope);
    for (int step = 0; step < steps; ++step) {
      int64_t half = kGlobalBatch / n;
      exe.Run(*m.main, BatchRows(shape, step, kGlobalBatch, rank * half, (rank + 1) * half), {}, &scope);
      per_step[rank][step] = Snapshot(scope, m.params);
    }
    calls[rank] = fleet.training_group()->stats().allreduce_calls;
    buckets[rank] = m.dist->buckets().size();
  });
  EXPECT_EQ(buckets[0], 1u);
  EXPECT_EQ(calls[0], steps / 4);
  for (int step = 0; step < steps; ++step) {
    float diff = MaxAbsDiff(per_step[0][step], per_step[1][step]);
    if ((step + 1) % 4 == 0) {
      EXPECT_EQ(diff, 0.0f) << "after sync step " << step + 1;
    } else {
      EXPECT_GT(diff, 0.0f) << "ranks train on different data between syncs (step " << step + 1 << ")";
    }
  }
}

TEST(FleetFusion, OneAllreducePerBucketAndOverlap) {
  MlpShape shape;
  shape.in = 32;
  shape.hidden = {600, 600};  // fc_1.w is 1.44 MB: several 1 MB buckets
  for (bool fuse : {true, false}) {
    DistributedStrategy s;
    s.set_fuse_all_reduce_ops(fuse);
    s.set_fuse_grad_size_in_MB(1);
    const int steps = 3;
    std::vector<std::pair<std::string, int64_t>> trace;  // rank 0, last step
    int64_t calls = 0;
    size_t buckets = 0;
    RunRanks(2, [&](int rank, Fleet& fleet) {
      Model m = BuildMlp(shape, kLr, &fleet, s);
      Executor exe;
      Scope scope;
      exe.Run(*m.startup, {}, {}, &scope);
      for (int step = 0; step < steps; ++step) {
        if (rank == 0 && step == steps - 1) {
          exe.set_op_observer([&](const OpDesc& op, int64_t start, int64_t end) {
            trace.emplace_back(op.type + ((op.Role() & kOpRoleBackward) ? "/bw" : ""), start);
          });
        }
        exe.Run(*m.main, BatchRows(shape, step, 16, rank * 8, rank * 8 + 8), {}, &scope);
      }
      if (rank == 0) calls = fleet.training_group()->stats().allreduce_calls, buckets = m.dist->buckets().size();
    });
    EXPECT_EQ(buckets, fuse ? 3u : 6u);
    EXPECT_EQ(calls, static_cast<int64_t>(steps * buckets)) << "one all-reduce per bucket per step";
    // Overlap: the first bucket starts while backward ops are still to run.
    auto first_start = std::find_if(trace.begin(), trace.end(),
                                    [](const auto& e) { return e.first == "c_allreduce_start/bw"; });
    ASSERT_NE(first_start, trace.end());
    auto later_backward = std::find_if(first_start + 1, trace.end(), [](const auto& e) {
      return e.first.ends_with("_grad/bw");
    });
    ASSERT_NE(later_backward, trace.end()) << "no backward op ran after the first all-reduce started";
    EXPECT_LT(first_start->second, later_backward->second);
    std::printf("[fusion] fuse=%d buckets=%zu allreduce calls/step=%lld\n", fuse, buckets,
                static_cast<long long>(calls / steps));
  }
}

// fault_tolerance "step" in-process: rank 2 of 3 leaves (its groups close,
// its loss is published where the launcher would write it). Ranks 0 and 1
// drop the step, re-form as a world of 2 and agree on the state of the one
// that committed more steps: rank 0 claims one more and holds other
// parameters, which rank 1 must receive bit for bit, with the step count.
TEST(FleetFaultTolerance, SurvivorsReformAndAdoptTheMostAdvancedState) {
  const MlpShape shape;
  auto store = std::make_shared<comm::HashStore>();
  DistributedStrategy strategy;
  strategy.set_fault_tolerance("step");
  std::mutex mu;
  std::vector<Params> reformed(2), trained(2);
  std::vector<StepState> states(2);
  std::vector<std::string> errors;
  auto rank_main = [&](int rank) {
    Fleet fleet;
    FleetOptions opts;
    opts.backend = "gloo";  // thread ranks share a pid: shm could not see rank 2 go
    opts.timeout = std::chrono::seconds(30);
    fleet.init(UserDefinedRoleMaker(rank, Role::kWorker, 3), store, opts);
    Model m = BuildMlp(shape, kLr, &fleet, strategy);
    ASSERT_TRUE(fleet.fault_tolerant());
    Executor exe;
    Scope scope;
    exe.Run(*m.startup, {}, {}, &scope);
    StepState state;
    auto step = [&](int world_rank, int world) {
      const int64_t rows = kGlobalBatch / world;
      return fleet.run_step(exe, *m.main,
                            BatchRows(shape, int(state.step), kGlobalBatch, world_rank * rows,
                                      (world_rank + 1) * rows),
                            {m.loss.name()}, state, rows, &scope);
    };
    for (int s = 0; s < 2; ++s) ASSERT_TRUE(step(rank, 3).has_value());
    if (rank == 2) {
      store->setString("flotilla/ft/lost/2", "rank 2 left");
      return;  // ~Fleet closes its connections
    }
    if (rank == 0) {
      state.step += 1;
      for (const auto& name : m.params) {
        Tensor* t = scope.GetVar(name).GetMutableTensor();
        for (int64_t i = 0; i < t->numel(); ++i) t->data<float>()[i] += 0.5f;
      }
    }
    EXPECT_FALSE(step(rank, 3).has_value());  // dropped: rank 2 is gone
    EXPECT_EQ(fleet.worker_num(), 2);
    EXPECT_EQ(fleet.worker_index(), rank);
    EXPECT_EQ(fleet.fault_stats().faults, 1);
    EXPECT_EQ(fleet.fault_stats().steps_lost, 1);
    Params after_reform = Snapshot(scope, m.params);
    ASSERT_TRUE(step(fleet.worker_index(), 2).has_value());
    std::lock_guard<std::mutex> lock(mu);
    reformed[rank] = std::move(after_reform);
    trained[rank] = Snapshot(scope, m.params);
    states[rank] = state;
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      try {
        rank_main(r);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mu);
        errors.push_back(StrCat("rank ", r, ": ", e.what()));
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(errors.empty()) << errors.front();
  // Rank 0 committed 3 steps (its claim), then one more in the world of 2.
  EXPECT_EQ(states[0].step, 4);
  EXPECT_EQ(states[1].step, 4);
  EXPECT_EQ(states[0].position, states[1].position);
  EXPECT_EQ(MaxAbsDiff(reformed[0], reformed[1]), 0.0f);  // rank 0's (shifted) parameters
  EXPECT_EQ(MaxAbsDiff(trained[0], trained[1]), 0.0f);
  EXPECT_GT(MaxAbsDiff(reformed[0], trained[0]), 0.0f);  // the step after moved them
}

TEST(FleetBroadcast, StartupGivesEveryRankRankZerosParameters) {
  MlpShape shape;
  std::vector<Params> initial(2);
  RunRanks(2, [&](int rank, Fleet& fleet) {
    Model m = BuildMlp(shape, kLr, &fleet);
    Executor exe;
    Scope scope;
    exe.Run(*m.startup, {}, {}, &scope);
    initial[rank] = Snapshot(scope, m.params);
  });
  EXPECT_EQ(MaxAbsDiff(initial[0], initial[1]), 0.0f);
}

}  // namespace
}  // namespace flotilla::fleet::testing
