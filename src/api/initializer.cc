#include "flotilla/api/initializer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

namespace flotilla::initializer {
namespace {

OpDesc InitOp(const std::string& type, const VarDesc& var) {
  OpDesc op(type);
  op.Out("Out", {var.name})
      .Set("shape", std::vector<int64_t>(var.shape.begin(), var.shape.end()))
      .Set("dtype", static_cast<int32_t>(var.dtype));
  return op;
}

// The seed of a random initialiser op. An explicit seed is used as given
// (the kernel mixes it with the variable's name). Seed 0 means "the
// program's random_seed" (Paddle's Program.random_seed), combined with the
// variable's name with its generated counter left out ("fc_3.w_0" →
// "fc.w_0") and how many other variables of that key the startup block
// initialised before it: two programs built alike draw alike whatever counters their
// names got, in every process; the parameters of one program still differ;
// a parameter named by the user draws by its name. The kernel then leaves
// the name out (seed_by_position). No program seed: a fresh seed per run.
struct OpSeed {
  int32_t seed = 0;
  bool by_position = false;
};

// "fc_3.w_0" → "fc.w_0"; other names unchanged.
std::string NameKey(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return name;
  size_t digits = dot;
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(name[digits - 1]))) --digits;
  if (digits == dot || digits == 0 || name[digits - 1] != '_') return name;
  return name.substr(0, digits - 1) + name.substr(dot);
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

uint64_t MixBits(uint64_t h) {
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

OpSeed EffectiveSeed(int seed, const Block& startup, const std::string& var) {
  if (seed != 0) return {seed, false};
  const uint64_t program_seed = startup.program()->random_seed();
  if (program_seed == 0) return {0, false};
  // The variables of this key initialised before, in order; a variable
  // initialised again (a shared parameter) keeps its place, so draws alike.
  const std::string key = NameKey(var);
  std::vector<std::string> earlier;
  for (const auto& op : startup.ops()) {
    if ((op->type != "uniform_random" && op->type != "gaussian_random") || !op->HasOutput("Out")) continue;
    const std::string& name = op->Output("Out");
    if (NameKey(name) == key && std::find(earlier.begin(), earlier.end(), name) == earlier.end()) {
      earlier.push_back(name);
    }
  }
  const uint64_t occurrence = static_cast<uint64_t>(std::find(earlier.begin(), earlier.end(), var) - earlier.begin());
  uint64_t h = MixBits(program_seed ^ Fnv1a(key));
  h = MixBits(h + 0x9e3779b97f4a7c15ull * (occurrence + 1));
  return {static_cast<int32_t>((h & 0x7fffffff) | 1), true};
}

OpDesc& SetSeed(OpDesc& op, int seed, const Block& startup) {
  const OpSeed s = EffectiveSeed(seed, startup, op.Output("Out"));
  return op.Set("seed", s.seed).Set("seed_by_position", s.by_position);
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
  OpDesc op = InitOp("uniform_random", var);
  op.Set("min", static_cast<float>(low_)).Set("max", static_cast<float>(high_));
  startup.AppendOp(SetSeed(op, seed_, startup));
}

void Normal::Append(Block& startup, const VarDesc& var) const {
  CheckShape(var);
  OpDesc op = InitOp("gaussian_random", var);
  op.Set("mean", static_cast<float>(mean_)).Set("std", static_cast<float>(std_));
  startup.AppendOp(SetSeed(op, seed_, startup));
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
