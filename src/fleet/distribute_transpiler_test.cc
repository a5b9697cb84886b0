#include "flotilla/fleet/distribute_transpiler.h"

#include <gtest/gtest.h>

#include "fleet/ps/table_spec.h"
#include "flotilla/api/layers.h"
#include "flotilla/api/optimizer.h"
#include "flotilla/common/error.h"
#include "flotilla/framework/op_registry.h"
#include "flotilla/ps/update_rule.h"

namespace flotilla::fleet {
namespace {

struct Net {
  Program main, startup;
  std::string emb_w;
};

// fc over [x, is_distributed embedding(ids)], minimised by `opt`.
void Build(Net& n, optimizer::Optimizer& opt) {
  RegisterAllOps();
  ProgramGuard guard(n.main, n.startup);
  UniqueNameGuard names;
  auto x = layers::data("x", {4});
  auto ids = layers::data("ids", {1}, DType::kInt64);
  auto y = layers::data("y", {1});
  ParamAttr emb_attr = ParamAttr::Named("emb", std::make_shared<initializer::Uniform>(-0.1, 0.1, 9));
  auto emb = layers::embedding(ids, {1'000'000, 8}, true, /*is_distributed=*/true, -1, emb_attr);
  auto pred = layers::fc(std::vector<Variable>{x, emb}, 1);
  opt.minimize(layers::mean(layers::square_error_cost(pred, y)));
  n.emb_w = "emb";
}

// Build's net with a second is_distributed lookup: "wide" (width 1) of "ids2".
void BuildTwoTables(Net& n, optimizer::Optimizer& opt) {
  RegisterAllOps();
  ProgramGuard guard(n.main, n.startup);
  UniqueNameGuard names;
  auto ids = layers::data("ids", {1}, DType::kInt64);
  auto ids2 = layers::data("ids2", {1}, DType::kInt64);
  auto y = layers::data("y", {1});
  auto emb = layers::embedding(ids, {1'000'000, 8}, true, true, -1, ParamAttr::Named("emb"));
  auto wide = layers::embedding(ids2, {1'000'000, 1}, true, true, 0, ParamAttr::Named("wide"));
  auto pred = layers::elementwise_add(layers::fc(emb, 1), wide);
  opt.minimize(layers::mean(layers::square_error_cost(pred, y)));
}

std::vector<std::string> OpTypes(const Program& p) {
  std::vector<std::string> out;
  for (const auto& op : p.global_block().ops()) out.push_back(op->type);
  return out;
}

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(DistributeTranspiler, SyncTrainerProgramSendsPullsAndRedirectsLookups) {
  Net n;
  optimizer::SGD sgd(0.1f);
  Build(n, sgd);
  DistributeTranspiler t;
  t.transpile(1, "127.0.0.1:7001, 127.0.0.1:7002", 2, true, &n.main, &n.startup);
  auto types = OpTypes(t.get_trainer_program());
  EXPECT_EQ(&t.get_trainer_program(), &n.main);  // rewritten in place
  EXPECT_EQ(types.front(), "ps_trainer_init");
  EXPECT_EQ(types[types.size() - 3], "ps_send");
  EXPECT_EQ(types[types.size() - 2], "ps_barrier");
  EXPECT_EQ(types.back(), "ps_recv");
  EXPECT_FALSE(Has(types, "sgd"));
  EXPECT_FALSE(Has(types, "lookup_table"));
  EXPECT_TRUE(Has(types, "distributed_lookup_table"));
  EXPECT_TRUE(Has(types, "distributed_lookup_table_grad"));
  EXPECT_FALSE(n.main.global_block().HasVar(n.emb_w)) << "trainers never hold a distributed table";
  for (const auto& op : n.startup.global_block().ops()) {
    auto outs = op->OutputArgumentNames();
    EXPECT_FALSE(Has(outs, n.emb_w)) << "startup still initialises " << n.emb_w;
  }
  const OpDesc& init = n.main.global_block().op(0);
  EXPECT_EQ(init.Attr<int32_t>("trainer_id"), 1);
  EXPECT_EQ(init.Attr<std::vector<std::string>>("endpoints"),
            (std::vector<std::string>{"127.0.0.1:7001", "127.0.0.1:7002"}));
  ASSERT_EQ(t.tables().size(), 4u);  // two fc weights, the bias, the embedding
  for (const auto& table : t.tables()) {
    EXPECT_EQ(table.optimizer, "sgd");
    EXPECT_FLOAT_EQ(table.learning_rate, 0.1f);
    if (table.name != n.emb_w) continue;
    EXPECT_TRUE(table.sparse && table.distributed);
    EXPECT_EQ(table.init_kind, "uniform");
    EXPECT_FLOAT_EQ(table.init_b, 0.1f);
    EXPECT_EQ(table.init_seed, 9u);
  }
}

TEST(DistributeTranspiler, PserverProgramCarriesItsEndpointTablesAndMode) {
  Net n;
  optimizer::Adam adam(0.01f, 0.8f, 0.9f);
  Build(n, adam);
  DistributeTranspiler t;
  t.transpile(0, "127.0.0.1:7001,127.0.0.1:7002", 3, false, &n.main, &n.startup);
  Program ps = t.get_pserver_program("127.0.0.1:7002", "/models/x");
  ASSERT_EQ(ps.global_block().op_size(), 1u);
  const OpDesc& op = ps.global_block().op(0);
  EXPECT_EQ(op.type, "listen_and_serv");
  EXPECT_EQ(op.Attr<int32_t>("server_index"), 1);
  EXPECT_EQ(op.Attr<int32_t>("num_trainers"), 3);
  EXPECT_EQ(op.Attr<std::string>("mode"), "async");
  EXPECT_FALSE(op.Attr<bool>("sync_mode"));
  EXPECT_EQ(op.Attr<std::string>("model_dir"), "/models/x");
  auto tables = TablesFromJson(op.Attr<std::string>("tables"), "test");
  ASSERT_EQ(tables.size(), 4u);
  EXPECT_EQ(tables[0].optimizer, "adam");
  EXPECT_FLOAT_EQ(tables[0].beta1, 0.8f);
  EXPECT_FLOAT_EQ(tables[0].beta2, 0.9f);
  EXPECT_EQ(t.get_startup_program("127.0.0.1:7002", ps).global_block().op_size(), 0u);
  EXPECT_FALSE(Has(OpTypes(n.main), "ps_barrier")) << "async trainers do not wait for each other";
  try {
    t.get_pserver_program("127.0.0.1:9999");
    FAIL() << "an endpoint outside the list was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:9999"), std::string::npos) << e.what();
  }
}

TEST(DistributeTranspiler, GeoKeepsLocalDenseSgdAndStepsTheCommunicator) {
  Net n;
  optimizer::SGD sgd(0.1f);
  Build(n, sgd);
  DistributeTranspiler t({.mode = "geo", .geo_k_steps = 7});
  t.transpile(0, "127.0.0.1:7001", 2, false, &n.main, &n.startup);
  auto types = OpTypes(n.main);
  EXPECT_EQ(std::count(types.begin(), types.end(), "sgd"), 3) << "dense parameters train locally";
  EXPECT_EQ(types.back(), "ps_geo_step");
  EXPECT_FALSE(Has(types, "ps_recv"));
  EXPECT_EQ(n.main.global_block().op(0).Attr<int32_t>("k_steps"), 7);
}

// Every mode pulls the fed ids of every lookup in one ps_prefetch_sparse
// right after ps_trainer_init.
TEST(DistributeTranspiler, PrefetchesTheFedIdsOfEveryLookupInOneOp) {
  for (const std::string mode : {"geo", "async", "sync"}) {
    Net n;
    optimizer::SGD sgd(0.1f);
    BuildTwoTables(n, sgd);
    DistributeTranspiler t({.mode = mode});
    t.transpile(0, "127.0.0.1:7001", 1, false, &n.main, &n.startup);
    auto types = OpTypes(n.main);
    EXPECT_EQ(std::count(types.begin(), types.end(), "distributed_lookup_table"), 2) << mode;
    const OpDesc& prefetch = n.main.global_block().op(1);
    ASSERT_EQ(prefetch.type, "ps_prefetch_sparse");
    EXPECT_EQ(prefetch.Inputs("Ids"), (std::vector<std::string>{"ids", "ids2"}));
    EXPECT_EQ(prefetch.Attr<std::vector<std::string>>("table_names"), (std::vector<std::string>{"emb", "wide"}));
    EXPECT_EQ(prefetch.Attr<std::vector<int64_t>>("padding_idxs"), (std::vector<int64_t>{-1, 0}));
  }
}

TEST(DistributeTranspiler, MomentumTablesCarryMuAndNesterov) {
  Net n;
  optimizer::Momentum momentum(0.1f, 0.8f, /*use_nesterov=*/true);
  Build(n, momentum);
  DistributeTranspiler t;
  t.transpile(0, "127.0.0.1:7001", 1, true, &n.main, &n.startup);
  ASSERT_FALSE(t.tables().empty());
  for (const auto& table : t.tables()) {
    EXPECT_EQ(table.optimizer, "momentum") << table.name;
    EXPECT_FLOAT_EQ(table.momentum, 0.8f) << table.name;
    EXPECT_TRUE(table.use_nesterov) << table.name;
    EXPECT_EQ(ps::MakeUpdateRule(RuleConfig(table))->name(), "momentum_nesterov");
  }
  auto back = TablesFromJson(TablesToJson(t.tables()), "test");
  EXPECT_FLOAT_EQ(back.at(0).momentum, 0.8f);
  EXPECT_TRUE(back.at(0).use_nesterov);
}

TEST(DistributeTranspiler, RejectsBadEndpointsAndGeoWithoutSgd) {
  Net a;
  optimizer::SGD sgd(0.1f);
  Build(a, sgd);
  EXPECT_THROW(DistributeTranspiler().transpile(0, "nohostport", 1, true, &a.main, &a.startup),
               InvalidArgument);
  Net b;
  optimizer::Momentum momentum(0.1f, 0.9f);
  Build(b, momentum);
  try {
    DistributeTranspiler({.mode = "geo", .geo_k_steps = 7})
        .transpile(0, "127.0.0.1:7001", 1, true, &b.main, &b.startup);
    FAIL() << "GEO with momentum was accepted";
  } catch (const Unimplemented& e) {
    EXPECT_NE(std::string(e.what()).find("SGD"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace flotilla::fleet
