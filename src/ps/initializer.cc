#include "flotilla/ps/initializer.h"

#include <cmath>

#include "flotilla/ps/slicing.h"

namespace flotilla::ps {

InitializerConfig InitializerConfig::Constant(float v) {
  InitializerConfig c;
  c.value = v;
  return c;
}

InitializerConfig InitializerConfig::Uniform(float low, float high, uint64_t seed) {
  InitializerConfig c;
  c.kind = Kind::kUniform;
  c.low = low;
  c.high = high;
  c.seed = seed;
  return c;
}

InitializerConfig InitializerConfig::Normal(float mean, float stddev, uint64_t seed) {
  InitializerConfig c;
  c.kind = Kind::kNormal;
  c.mean = mean;
  c.stddev = stddev;
  c.seed = seed;
  return c;
}

namespace {

// A uniform double in (0, 1) from the counter (seed, key, index, lane).
double Unit(const InitializerConfig& c, int64_t key, int64_t index, uint64_t lane) {
  uint64_t h = MixBits(c.seed ^ MixBits(static_cast<uint64_t>(key)));
  h = MixBits(h ^ (static_cast<uint64_t>(index) * 2 + lane));
  return (static_cast<double>(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

float Sample(const InitializerConfig& c, int64_t key, int64_t index) {
  switch (c.kind) {
    case InitializerConfig::Kind::kConstant:
      return c.value;
    case InitializerConfig::Kind::kUniform:
      return static_cast<float>(c.low + (c.high - c.low) * Unit(c, key, index, 0));
    case InitializerConfig::Kind::kNormal: {
      // Box-Muller on two independent lanes of the same counter.
      double r = std::sqrt(-2.0 * std::log(Unit(c, key, index, 0)));
      double z = r * std::cos(2.0 * M_PI * Unit(c, key, index, 1));
      return static_cast<float>(c.mean + c.stddev * z);
    }
  }
  return 0.0f;
}

}  // namespace

void FillInitial(const InitializerConfig& config, int64_t key, int64_t first_index,
                 std::span<float> out) {
  if (config.custom) {
    config.custom(key, first_index, out);
    return;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = Sample(config, key, first_index + static_cast<int64_t>(i));
  }
}

}  // namespace flotilla::ps
