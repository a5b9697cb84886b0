#include "flotilla/api/initializer.h"

#include <cmath>

namespace flotilla::initializer {
namespace {

OpDesc InitOp(const std::string& type, const VarDesc& var) {
  OpDesc op(type);
  op.Out("Out", {var.name})
      .Set("shape", std::vector<int64_t>(var.shape.begin(), var.shape.end()))
      .Set("dtype", static_cast<int32_t>(var.dtype));
  return op;
}

// seed 0 means "the program's random_seed", which makes a program built
// with a seed reproducible in every process (Paddle's Program.random_seed).
int32_t EffectiveSeed(int seed, const Block& startup) {
  if (seed != 0) return seed;
  return static_cast<int32_t>(startup.program()->random_seed() & 0x7fffffff);
}

void CheckShape(const VarDesc& var) {
  for (auto d : var.shape) {
    FLOTILLA_ENFORCE(d > 0, "cannot initialise '", var.name, "' of shape ",
                     DimsToString(var.shape), ": every dimension must be known and positive");
  }
}

}  // namespace

void Constant::Append(Block& startup, const VarDesc& var) const {
  CheckShape(var);
  startup.AppendOp(InitOp("fill_constant", var).Set("value", value_));
}

void Uniform::Append(Block& startup, const VarDesc& var) const {
  CheckShape(var);
  startup.AppendOp(InitOp("uniform_random", var)
                       .Set("min", static_cast<float>(low_))
                       .Set("max", static_cast<float>(high_))
                       .Set("seed", EffectiveSeed(seed_, startup)));
}

void Normal::Append(Block& startup, const VarDesc& var) const {
  CheckShape(var);
  startup.AppendOp(InitOp("gaussian_random", var)
                       .Set("mean", static_cast<float>(mean_))
                       .Set("std", static_cast<float>(std_))
                       .Set("seed", EffectiveSeed(seed_, startup)));
}

void Xavier::Append(Block& startup, const VarDesc& var) const {
  CheckShape(var);
  // Paddle: fan_in = shape[0], fan_out = product of the rest (1-D: both shape[0]).
  int64_t fan_in = fan_in_ > 0 ? fan_in_ : var.shape[0];
  int64_t fan_out = fan_out_ > 0 ? fan_out_
                                 : (var.shape.size() > 1 ? Product(var.shape, 1, var.shape.size())
                                                         : var.shape[0]);
  double sum = static_cast<double>(fan_in + fan_out);
  if (uniform_) {
    double limit = std::sqrt(6.0 / sum);
    Uniform(-limit, limit, seed_).Append(startup, var);
  } else {
    Normal(0.0, std::sqrt(2.0 / sum), seed_).Append(startup, var);
  }
}

}  // namespace flotilla::initializer
