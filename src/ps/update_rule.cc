#include "flotilla/ps/update_rule.h"

#include <algorithm>
#include <cmath>

#include "flotilla/common/enforce.h"

namespace flotilla::ps {

void UpdateRule::InitState(int64_t dim, std::span<float> state) const {
  std::fill(state.begin(), state.end(), 0.0f);
}

UpdateRuleConfig UpdateRuleConfig::Sgd(float lr) { return {.learning_rate = lr}; }

UpdateRuleConfig UpdateRuleConfig::Momentum(float lr, float momentum, bool use_nesterov) {
  return {.kind = Kind::kMomentum, .learning_rate = lr, .momentum = momentum, .use_nesterov = use_nesterov};
}

UpdateRuleConfig UpdateRuleConfig::Adagrad(float lr, float epsilon) {
  return {.kind = Kind::kAdagrad, .learning_rate = lr, .epsilon = epsilon};
}

UpdateRuleConfig UpdateRuleConfig::Adam(float lr, float beta1, float beta2, float epsilon) {
  return {.kind = Kind::kAdam, .learning_rate = lr, .beta1 = beta1, .beta2 = beta2, .epsilon = epsilon};
}

UpdateRuleConfig UpdateRuleConfig::GeoSum() { return {.kind = Kind::kGeoSum}; }

namespace {

// Implements Apply and ApplyRows with the rule's non-virtual
// Step(values, state, grad, n), inlined into the batch loop.
template <typename Rule>
class RuleBase : public UpdateRule {
 public:
  using UpdateRule::UpdateRule;
  using UpdateRule::Apply;
  void Apply(std::span<float> value, std::span<float> state, std::span<const float> grad,
             float lr) const final {
    self().Step(value.data(), state.data(), grad.data(), value.size(), lr);
  }
  void ApplyRows(std::span<float* const> rows, std::span<const float* const> grads, int64_t dim,
                 float lr) const final {
    const size_t n = static_cast<size_t>(dim);
    for (size_t j = 0; j < rows.size(); ++j) self().Step(rows[j], rows[j] + n, grads[j], n, lr);
  }

 private:
  const Rule& self() const { return static_cast<const Rule&>(*this); }
};

class SgdRule : public RuleBase<SgdRule> {
 public:
  explicit SgdRule(float lr) : RuleBase(lr) {}
  std::string name() const override { return "sgd"; }
  int64_t StateSize(int64_t) const override { return 0; }
  void Step(float* p, float*, const float* g, size_t n, float lr) const {
    for (size_t i = 0; i < n; ++i) p[i] -= lr * g[i];
  }
};

// State: the velocity, one float per value.
class MomentumRule : public RuleBase<MomentumRule> {
 public:
  explicit MomentumRule(const UpdateRuleConfig& c) : RuleBase(c.learning_rate), c_(c) {}
  std::string name() const override { return c_.use_nesterov ? "momentum_nesterov" : "momentum"; }
  int64_t StateSize(int64_t dim) const override { return dim; }
  void Step(float* p, float* v, const float* g, size_t n, float lr) const {
    const float mu = c_.momentum;
    for (size_t i = 0; i < n; ++i) {
      v[i] = mu * v[i] + g[i];
      p[i] -= lr * (c_.use_nesterov ? g[i] + mu * v[i] : v[i]);
    }
  }
  bool advances() const override { return true; }
  // With g = 0, missed step k (1-based) has v_k = mu^k v_0 and moves p by
  // lr_k v_k (plain) or lr_k mu v_k (Nesterov): p moves by v_0 * S (times
  // mu for Nesterov), S = sum lr_k mu^k. Terms below 1e-12 of the first
  // are dropped, so a row that missed a million steps costs a few hundred.
  void Advance(float* p, float* v, int64_t dim, std::span<const float> lrs) const override {
    const double mu = c_.momentum;
    double sum = 0, power = 1;
    for (size_t k = 0; k < lrs.size() && power > 1e-12; ++k) {
      power *= mu;
      sum += lrs[k] * power;
    }
    const double decay = std::pow(mu, static_cast<double>(lrs.size()));
    const double move = sum * (c_.use_nesterov ? mu : 1.0);
    for (int64_t i = 0; i < dim; ++i) {
      p[i] = static_cast<float>(p[i] - move * v[i]);
      v[i] = static_cast<float>(decay * v[i]);
    }
  }

 private:
  UpdateRuleConfig c_;
};

// State: the squared-gradient accumulator, one float per value.
class AdagradRule : public RuleBase<AdagradRule> {
 public:
  explicit AdagradRule(const UpdateRuleConfig& c) : RuleBase(c.learning_rate), c_(c) {}
  std::string name() const override { return "adagrad"; }
  int64_t StateSize(int64_t dim) const override { return dim; }
  void InitState(int64_t, std::span<float> state) const override {
    std::fill(state.begin(), state.end(), c_.initial_accumulator);
  }
  void Step(float* p, float* m, const float* g, size_t n, float lr) const {
    for (size_t i = 0; i < n; ++i) {
      m[i] += g[i] * g[i];
      p[i] -= lr * g[i] / (std::sqrt(m[i]) + c_.epsilon);
    }
  }

 private:
  UpdateRuleConfig c_;
};

// State: first moments [dim], second moments [dim], beta1^t, beta2^t.
class AdamRule : public RuleBase<AdamRule> {
 public:
  explicit AdamRule(const UpdateRuleConfig& c) : RuleBase(c.learning_rate), c_(c) {}
  std::string name() const override { return "adam"; }
  int64_t StateSize(int64_t dim) const override { return 2 * dim + 2; }
  void InitState(int64_t dim, std::span<float> state) const override {
    std::fill(state.begin(), state.end(), 0.0f);
    state[2 * dim] = 1.0f;
    state[2 * dim + 1] = 1.0f;
  }
  void Step(float* p, float* s, const float* g, size_t n, float rate) const {
    float* m = s;
    float* v = s + n;
    float& b1p = s[2 * n];
    float& b2p = s[2 * n + 1];
    b1p *= c_.beta1;
    b2p *= c_.beta2;
    const float lr = rate * std::sqrt(1.0f - b2p) / (1.0f - b1p);
    for (size_t i = 0; i < n; ++i) {
      m[i] = c_.beta1 * m[i] + (1.0f - c_.beta1) * g[i];
      v[i] = c_.beta2 * v[i] + (1.0f - c_.beta2) * g[i] * g[i];
      p[i] -= lr * m[i] / (std::sqrt(v[i]) + c_.epsilon);
    }
  }

 private:
  UpdateRuleConfig c_;
};

class GeoSumRule : public RuleBase<GeoSumRule> {
 public:
  GeoSumRule() : RuleBase(1.0f) {}
  std::string name() const override { return "geo_sum"; }
  int64_t StateSize(int64_t) const override { return 0; }
  void Step(float* p, float*, const float* d, size_t n, float) const {
    for (size_t i = 0; i < n; ++i) p[i] += d[i];
  }
};

}  // namespace

std::shared_ptr<const UpdateRule> MakeUpdateRule(const UpdateRuleConfig& config) {
  using Kind = UpdateRuleConfig::Kind;
  switch (config.kind) {
    case Kind::kSgd: return std::make_shared<SgdRule>(config.learning_rate);
    case Kind::kMomentum: return std::make_shared<MomentumRule>(config);
    case Kind::kAdagrad: return std::make_shared<AdagradRule>(config);
    case Kind::kAdam: return std::make_shared<AdamRule>(config);
    case Kind::kGeoSum: return std::make_shared<GeoSumRule>();
  }
  FLOTILLA_THROW(InvalidArgument, "unknown update rule kind ", static_cast<int>(config.kind));
}

}  // namespace flotilla::ps
