// The collective pass's output, op by op, and its building blocks.
#include "fleet/collective_pass.h"

#include <gtest/gtest.h>

#include "fleet/ops/collective_ops.h"
#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"

namespace flotilla::fleet {
namespace {

TEST(MakeBuckets, FusesUpToTheCapAndSpreadsOverCommunicators) {
  std::vector<BucketItem> items = {{"a", 40}, {"b", 40}, {"c", 40}, {"big", 500}, {"d", 10}};
  auto fused = MakeBuckets(items, /*fuse=*/true, /*cap=*/100, /*comm_num=*/2);
  ASSERT_EQ(fused.size(), 4u);
  EXPECT_EQ(fused[0].vars, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(fused[1].vars, (std::vector<std::string>{"c"}));
  EXPECT_EQ(fused[2].vars, (std::vector<std::string>{"big"}));  // over the cap: alone
  EXPECT_EQ(fused[3].vars, (std::vector<std::string>{"d"}));
  EXPECT_EQ(fused[0].comm, 0);
  EXPECT_EQ(fused[1].comm, 1);
  EXPECT_EQ(fused[2].comm, 0);
  EXPECT_EQ(fused[0].bytes, 80);
  EXPECT_EQ(MakeBuckets(items, false, 100, 1).size(), items.size());
  EXPECT_TRUE(MakeBuckets({}, true, 100, 1).empty());
}

TEST(MakeBuckets, NeverMixesDtypes) {
  std::vector<BucketItem> items = {{"f", 4, DType::kFloat32}, {"d", 8, DType::kFloat64},
                                   {"g", 4, DType::kFloat32}};
  EXPECT_EQ(MakeBuckets(items, true, 1 << 20, 1).size(), 3u);
}

TEST(Base64, RoundTripsEveryByte) {
  for (size_t n : {0, 1, 2, 3, 4, 255, 256}) {
    std::string bytes;
    for (size_t i = 0; i < n; ++i) bytes.push_back(static_cast<char>(i * 37));
    EXPECT_EQ(Base64Decode(Base64Encode(bytes)), bytes) << n;
  }
  EXPECT_EQ(Base64Encode("Man"), "TWFu");
  EXPECT_EQ(Base64Encode("M"), "TQ==");
  EXPECT_THROW(Base64Decode("T!=="), Corruption);
}

struct Built {
  Program main, startup;
  std::vector<ParamGrad> params_grads;
};

// fc(8→16, tanh) → fc(16→2, softmax) → cross_entropy → mean, SGD.
std::unique_ptr<Built> Build() {
  RegisterCollectiveOps();
  auto b = std::make_unique<Built>();
  ProgramGuard guard(b->main, b->startup);
  UniqueNameGuard names;
  auto x = layers::data("x", {8});
  auto y = layers::data("y", {1}, DType::kInt64);
  auto h = layers::fc(x, 16, 1, {}, {}, "tanh");
  auto p = layers::fc(h, 2, 1, {}, {}, "softmax");
  auto loss = layers::mean(layers::cross_entropy(p, y));
  optimizer::SGD sgd(0.1f);
  b->params_grads = sgd.backward(loss, &b->startup);
  sgd.apply_gradients(b->params_grads);
  return b;
}

std::vector<std::string> OpTypes(const Program& p) {
  std::vector<std::string> types;
  for (const auto& op : p.global_block().ops()) types.push_back(op->type);
  return types;
}

size_t IndexOf(const std::vector<std::string>& v, const std::string& s, size_t from = 0) {
  for (size_t i = from; i < v.size(); ++i) {
    if (v[i] == s) return i;
  }
  return v.size();
}

TEST(CollectivePass, StartsEachBucketAfterItsLastGradientAndWaitsBeforeTheOptimizer) {
  auto b = Build();
  DistributedStrategy s;
  s.set_fuse_all_reduce_ops(false);
  auto result = ApplyCollectivePass(b->main, b->startup, b->params_grads, s, /*ring_id=*/7);
  ASSERT_EQ(result.buckets.size(), 4u);
  auto types = OpTypes(b->main);
  size_t first_sgd = IndexOf(types, "sgd");
  size_t first_start = IndexOf(types, "c_allreduce_start");
  size_t first_wait = IndexOf(types, "c_allreduce_wait");
  EXPECT_LT(first_start, IndexOf(types, "tanh_grad")) << "the last layer's bucket starts mid-backward";
  EXPECT_EQ(first_wait + 4, first_sgd) << "four waits right before the optimizer";
  // The last bucket has nothing to overlap: reduced inline.
  const OpDesc& last_start = b->main.global_block().op(first_wait - 1);
  EXPECT_EQ(last_start.type, "c_allreduce_start");
  EXPECT_TRUE(last_start.Attr<bool>("sync"));
  EXPECT_FALSE(b->main.global_block().op(first_start).Attr<bool>("sync"));
  EXPECT_EQ(b->main.global_block().op(first_start).Attr<int32_t>(kRingIdAttr), 7);
  // Every start follows the op that finally writes its gradient.
  const Block& block = b->main.global_block();
  for (size_t i = 0; i < block.op_size(); ++i) {
    if (block.op(i).type != "c_allreduce_start") continue;
    const std::string& grad = block.op(i).Inputs("X")[0];
    for (size_t j = i + 1; j < block.op_size(); ++j) {
      const auto& outs = block.op(j).OutputArgumentNames();
      bool writes = std::find(outs.begin(), outs.end(), grad) != outs.end();
      EXPECT_FALSE(writes && block.op(j).type != "c_allreduce_wait")
          << block.op(j).type << " writes " << grad << " after its all-reduce started";
    }
  }
  EXPECT_EQ(OpTypes(b->startup).back(), "c_broadcast");
  // fc_1's weight gradient is split from its input gradient and all-reduced
  // before the input gradient is computed.
  EXPECT_EQ(std::count(types.begin(), types.end(), "mul_grad"), 3);
  size_t weight_op = IndexOf(types, "mul_grad", IndexOf(types, "softmax_grad"));
  EXPECT_EQ(types[weight_op + 1], "c_allreduce_start");
  EXPECT_EQ(types[weight_op + 2], "mul_grad");
  EXPECT_FALSE(block.op(weight_op).HasOutput(GradVarName("X")));
  EXPECT_FALSE(block.op(weight_op + 2).HasOutput(GradVarName("Y")));
}

TEST(CollectivePass, FusesIntoOneBucketByDefault) {
  auto b = Build();
  auto result = ApplyCollectivePass(b->main, b->startup, b->params_grads, DistributedStrategy(), 0);
  ASSERT_EQ(result.buckets.size(), 1u);
  EXPECT_EQ(result.buckets[0].vars.size(), 4u);
  auto types = OpTypes(b->main);
  EXPECT_EQ(std::count(types.begin(), types.end(), "c_allreduce_start"), 1);
}

TEST(CollectivePass, LocalSGDAndGradientMergeGateTheirWork) {
  for (bool localsgd : {true, false}) {
    auto b = Build();
    DistributedStrategy s;
    if (localsgd) {
      s.set_localsgd(true);
      s.Set("localsgd_configs.k_steps", 4);
    } else {
      s.set_gradient_merge(true);
      s.Set("gradient_merge_configs.k_steps", 3);
    }
    ApplyCollectivePass(b->main, b->startup, b->params_grads, s, 0);
    auto types = OpTypes(b->main);
    EXPECT_EQ(IndexOf(types, "c_allreduce_start"), types.size()) << "no per-step all-reduce";
    EXPECT_LT(IndexOf(types, "c_step_gate"), IndexOf(types, "c_conditional_block"));
    EXPECT_EQ(types.back(), "c_conditional_block");
    // Gradient merge moves the optimizer into the conditional block.
    EXPECT_EQ(IndexOf(types, "sgd") < types.size(), localsgd);
  }
}

}  // namespace
}  // namespace flotilla::fleet
