// Initial values of table entries. Every value is a pure function of
// (seed, key, element index), so a sparse row created on first pull is the
// same on any server, in any order, after any restart, and dense values do
// not depend on how the parameter was sliced.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

namespace flotilla::ps {

struct InitializerConfig {
  enum class Kind { kConstant, kUniform, kNormal };
  Kind kind = Kind::kConstant;
  float value = 0.0f;                // kConstant
  float low = -1.0f, high = 1.0f;    // kUniform
  float mean = 0.0f, stddev = 1.0f;  // kNormal
  uint64_t seed = 0;
  // When set, replaces the kinds above: fills out[i] with the value of
  // element (first_index + i) of entry `key`. It must be a pure function of
  // its arguments for rows to match across servers and restarts.
  std::function<void(int64_t key, int64_t first_index, std::span<float> out)> custom;

  static InitializerConfig Constant(float v);
  static InitializerConfig Uniform(float low, float high, uint64_t seed);
  static InitializerConfig Normal(float mean, float stddev, uint64_t seed);
};

// Fills out[i] with the initial value of element (first_index + i) of the
// entry `key` (a sparse row key, or 0 for a dense parameter).
void FillInitial(const InitializerConfig& config, int64_t key, int64_t first_index,
                 std::span<float> out);

}  // namespace flotilla::ps
