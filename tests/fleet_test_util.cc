#include "fleet_test_util.h"

#include "comm/testing/run_ranks.h"
#include "flotilla/api/regularizer.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace flotilla::fleet::testing {

Model BuildMlp(const MlpShape& shape, float lr, Fleet* fleet, const DistributedStrategy& strategy) {
  Model m;
  ProgramGuard guard(*m.main, *m.startup);
  UniqueNameGuard names;
  auto x = layers::data("x", {shape.in});
  auto y = layers::data("y", {1}, DType::kInt64);
  Variable h = x;
  if (shape.vocab > 0) {
    auto ids = layers::data("ids", {1}, DType::kInt64);
    auto emb = layers::embedding(ids, {shape.vocab, 4}, /*is_sparse=*/true);
    h = layers::concat({x, layers::reshape(emb, {-1, 4})}, 1);
  }
  for (int64_t width : shape.hidden) h = layers::fc(h, width, 1, {}, {}, "tanh");
  m.prediction = layers::fc(h, shape.classes, 1, {}, {}, "softmax");
  m.loss = layers::mean(layers::cross_entropy(m.prediction, y));
  m.sgd = std::make_unique<optimizer::SGD>(
      lr, shape.l2_decay > 0 ? regularizer::L2Decay(shape.l2_decay) : nullptr);
  if (fleet != nullptr) {
    m.dist = std::make_unique<DistributedOptimizer>(fleet->distributed_optimizer(*m.sgd, strategy));
    m.dist->minimize(m.loss, m.startup.get());
  } else {
    m.sgd->minimize(m.loss, m.startup.get());
  }
  for (const VarDesc* v : m.main->global_block().AllVars()) {
    if (v->is_parameter) m.params.push_back(v->name);
  }
  return m;
}

FeedMap BatchRows(const MlpShape& shape, int step, int64_t global_batch, int64_t begin, int64_t end) {
  std::mt19937 rng(1000 + step);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  std::vector<float> xs(global_batch * shape.in);
  std::vector<int64_t> ys(global_batch);
  for (auto& v : xs) v = uni(rng);
  for (auto& v : ys) v = static_cast<int64_t>(rng() % shape.classes);
  std::vector<float> x(xs.begin() + begin * shape.in, xs.begin() + end * shape.in);
  std::vector<int64_t> y(ys.begin() + begin, ys.begin() + end);
  FeedMap feed = {{"x", Tensor::FromVector(x, {end - begin, shape.in})},
                  {"y", Tensor::FromVector(y, {end - begin, 1})}};
  if (shape.vocab > 0) {
    std::vector<int64_t> ids;
    for (int64_t r = begin; r < end; ++r) ids.push_back((r * 7 + step * 3) % shape.vocab);
    feed["ids"] = Tensor::FromVector(ids, {end - begin, 1});
  }
  return feed;
}

Params Snapshot(const Scope& scope, const std::vector<std::string>& names) {
  Params out;
  for (const auto& n : names) out[n] = scope.GetVar(n).GetTensor().Clone();
  return out;
}

void Restore(Scope& scope, const Params& params) {
  for (const auto& [n, t] : params) scope.GetVar(n).GetMutableTensor()->CopyFrom(t);
}

float MaxAbsDiff(const Params& a, const Params& b) {
  float worst = 0.0f;
  for (const auto& [n, t] : a) {
    const Tensor& u = b.at(n);
    for (int64_t i = 0; i < t.numel(); ++i) {
      worst = std::max(worst, std::fabs(t.data<float>()[i] - u.data<float>()[i]));
    }
  }
  return worst;
}

void RunRanks(int n, const std::function<void(int, Fleet&)>& fn,
              const std::function<std::string(int)>& host_of) {
  auto store = std::make_shared<comm::HashStore>();
  comm::testing::RunRanks(n, [&](int r) {
    Fleet fleet;
    UserDefinedRoleMaker role(r, Role::kWorker, n);
    if (host_of) role.set_host_id(host_of(r));
    FleetOptions opts;
    opts.timeout = std::chrono::seconds(60);
    fleet.init(role, store, opts);
    fn(r, fleet);
    fleet.barrier_worker();  // nobody tears its group down under a peer
  });
}

}  // namespace flotilla::fleet::testing
