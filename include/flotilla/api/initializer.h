// Initializers append the op that gives a parameter its first value to the
// startup program (Paddle's fluid.initializer).
#pragma once

#include <cstdint>
#include <memory>

#include "flotilla/framework/program.h"

namespace flotilla::initializer {

class Initializer {
 public:
  virtual ~Initializer() = default;
  // Appends to `startup` an op writing `var` (shape and dtype from var).
  virtual void Append(Block& startup, const VarDesc& var) const = 0;
};

using InitializerPtr = std::shared_ptr<const Initializer>;

class Constant : public Initializer {
 public:
  explicit Constant(double value = 0.0) : value_(value) {}
  void Append(Block& startup, const VarDesc& var) const override;

 private:
  double value_;
};

// Uniform in [low, high). seed 0: the program's random_seed, else random.
class Uniform : public Initializer {
 public:
  Uniform(double low = -1.0, double high = 1.0, int seed = 0) : low_(low), high_(high), seed_(seed) {}
  void Append(Block& startup, const VarDesc& var) const override;

 private:
  double low_, high_;
  int seed_;
};

class Normal : public Initializer {
 public:
  Normal(double mean = 0.0, double std = 1.0, int seed = 0) : mean_(mean), std_(std), seed_(seed) {}
  void Append(Block& startup, const VarDesc& var) const override;

 private:
  double mean_, std_;
  int seed_;
};

// Glorot/Xavier: uniform in ±sqrt(6/(fan_in+fan_out)) or normal with
// std sqrt(2/(fan_in+fan_out)); fans default to the shape's first and
// remaining dims, as Paddle computes them.
class Xavier : public Initializer {
 public:
  explicit Xavier(bool uniform = true, int64_t fan_in = 0, int64_t fan_out = 0, int seed = 0)
      : uniform_(uniform), fan_in_(fan_in), fan_out_(fan_out), seed_(seed) {}
  void Append(Block& startup, const VarDesc& var) const override;

 private:
  bool uniform_;
  int64_t fan_in_, fan_out_;
  int seed_;
};

}  // namespace flotilla::initializer
