// Update rules: how a server applies a gradient (or a GEO delta) to the values
// it holds. Tables receive a rule as a policy object; rules are stateless and
// keep their per-entry optimizer state in a span the table owns beside the
// values (a dense block or a sparse row), so one rule serves every entry.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace flotilla::ps {

// Thread-safe: Apply may run concurrently on different entries. Every
// update takes the step's learning rate: the optimizer's constant rate
// (learning_rate()) unless the trainer sends a scheduled one with its push.
class UpdateRule {
 public:
  explicit UpdateRule(float learning_rate) : learning_rate_(learning_rate) {}
  virtual ~UpdateRule() = default;
  // "sgd", "momentum", "momentum_nesterov", "adagrad", "adam", "geo_sum";
  // recorded in saved tables.
  virtual std::string name() const = 0;
  // The configured (constant) learning rate.
  float learning_rate() const { return learning_rate_; }
  // Floats of state kept beside an entry of `dim` values, laid out as
  // element-wise arrays of `dim` floats followed by shared scalars (so
  // StateSize(d) = arrays * d + scalars): dense blocks re-cut for another
  // number of servers rely on it.
  virtual int64_t StateSize(int64_t dim) const = 0;
  // Sets fresh state for an entry of `dim` values (state.size() == StateSize(dim)).
  virtual void InitState(int64_t dim, std::span<float> state) const;
  // value -= f(grad, state, lr). grad.size() == value.size().
  virtual void Apply(std::span<float> value, std::span<float> state, std::span<const float> grad,
                     float lr) const = 0;
  void Apply(std::span<float> value, std::span<float> state, std::span<const float> grad) const {
    Apply(value, state, grad, learning_rate_);
  }
  // Apply over a batch of sparse rows: rows[j] points at `dim` values
  // followed by their state, grads[j] at `dim` gradient values. One virtual
  // call per batch rather than per row.
  virtual void ApplyRows(std::span<float* const> rows, std::span<const float* const> grads,
                         int64_t dim, float lr) const = 0;
  // Whether an entry keeps changing on steps without a gradient for it
  // (momentum: the velocity keeps moving the value). Sparse tables then
  // bring a row up to date when it is next touched, calling Advance with
  // the steps it missed, so a row updated lazily ends where one updated
  // every step with a zero gradient would.
  virtual bool advances() const { return false; }
  // The zero-gradient steps an entry of `dim` values missed; `lrs` holds
  // their learning rates, oldest first (one per missed step).
  virtual void Advance(float* value, float* state, int64_t dim, std::span<const float> lrs) const {}

 private:
  float learning_rate_;
};

struct UpdateRuleConfig {
  enum class Kind { kSgd, kMomentum, kAdagrad, kAdam, kGeoSum };
  Kind kind = Kind::kSgd;
  float learning_rate = 0.01f;
  float momentum = 0.9f;       // Momentum
  bool use_nesterov = false;   // Momentum
  float beta1 = 0.9f, beta2 = 0.999f;  // Adam
  float epsilon = 1e-8f;               // Adam; Adagrad uses epsilon too (Paddle: 1e-6)
  float initial_accumulator = 0.0f;    // Adagrad

  static UpdateRuleConfig Sgd(float lr);
  static UpdateRuleConfig Momentum(float lr, float momentum, bool use_nesterov = false);
  static UpdateRuleConfig Adagrad(float lr, float epsilon = 1e-6f);
  static UpdateRuleConfig Adam(float lr, float beta1 = 0.9f, float beta2 = 0.999f,
                               float epsilon = 1e-8f);
  static UpdateRuleConfig GeoSum();
};

// SGD:     p -= lr * g
// Momentum: v = mu v + g;  p -= lr * (nesterov ? g + mu v : v)  (Paddle's momentum op)
// Adagrad: m += g*g;  p -= lr * g / (sqrt(m) + eps)           (Paddle's adagrad op)
// Adam:    b1p *= b1; b2p *= b2; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g*g;
//          p -= lr * sqrt(1-b2p)/(1-b1p) * m / (sqrt(v) + eps)  (Paddle's adam op)
// GeoSum:  p += g   (g is a parameter delta pushed by a GEO trainer)
std::shared_ptr<const UpdateRule> MakeUpdateRule(const UpdateRuleConfig& config);

}  // namespace flotilla::ps
