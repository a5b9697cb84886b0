// A synthetic, learnable classification set for the mlp examples and tests.
//
// Features are standard normal; the label of each point is the class a fixed
// random linear teacher (weights drawn from `seed`) scores highest, and points
// whose best and second-best scores are closer than a margin are redrawn, so
// the classes are separable with room to spare: an mlp (or even a linear
// model) reaches well above 95% test accuracy. Deterministic for a seed.
// Samples: x float32 [num_features], y int64 [1] in [0, num_classes).
#pragma once

#include <cstdint>

#include "flotilla/io/reader.h"

namespace flotilla::io::synthetic {

struct ClassificationOptions {
  int64_t num_samples = 10000;  // train + test
  int num_features = 32;
  int num_classes = 2;
  uint64_t seed = 0;
  double test_fraction = 0.2;  // the last samples form the test set
};

struct Dataset {
  Reader train;
  Reader test;
  int64_t train_size = 0;
  int64_t test_size = 0;
};

// Throws InvalidArgument when a count is < 1 (num_classes < 2) or
// test_fraction is outside [0, 1).
Dataset Classification(const ClassificationOptions& options);
inline Dataset Classification(int64_t num_samples, int num_features = 32, int num_classes = 2,
                              uint64_t seed = 0) {
  return Classification(ClassificationOptions{num_samples, num_features, num_classes, seed});
}

}  // namespace flotilla::io::synthetic
