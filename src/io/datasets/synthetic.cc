// A margin-separated classification set labelled by a random linear teacher.
#include "flotilla/io/datasets/synthetic.h"

#include <cmath>
#include <random>

#include "flotilla/common/enforce.h"

namespace flotilla::io::synthetic {
namespace {

// Points closer than this (in teacher score, whose spread is about
// sqrt(num_features)) to a class boundary are redrawn.
constexpr double kMarginFraction = 0.2;

class Teacher {
 public:
  Teacher(int features, int classes, std::mt19937_64& rng)
      : features_(features), classes_(classes), w_(size_t(features) * classes) {
    std::normal_distribution<double> normal(0.0, 1.0);
    for (double& v : w_) v = normal(rng);
  }

  // The winning class, and how far it beats the runner-up.
  std::pair<int, double> Label(const std::vector<float>& x) const {
    int best = 0;
    double top = -1e300, second = -1e300;
    for (int c = 0; c < classes_; ++c) {
      double s = 0;
      for (int f = 0; f < features_; ++f) s += x[f] * w_[size_t(f) * classes_ + c];
      if (s > top) {
        second = top;
        top = s;
        best = c;
      } else if (s > second) {
        second = s;
      }
    }
    return {best, top - second};
  }

 private:
  int features_, classes_;
  std::vector<double> w_;  // [features, classes]
};

Sample Draw(const Teacher& teacher, int features, double margin, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(features));
  while (true) {
    for (float& v : x) v = normal(rng);
    auto [label, gap] = teacher.Label(x);
    if (gap < margin) continue;
    return {Tensor::FromVector<float>(x, {features}),
            Tensor::FromVector<int64_t>({label}, {1})};
  }
}

}  // namespace

Dataset Classification(const ClassificationOptions& o) {
  FLOTILLA_ENFORCE(o.num_samples >= 1 && o.num_features >= 1 && o.num_classes >= 2,
                   "synthetic::Classification: need num_samples >= 1, num_features >= 1 and "
                   "num_classes >= 2, got ", o.num_samples, ", ", o.num_features, ", ",
                   o.num_classes);
  FLOTILLA_ENFORCE(o.test_fraction >= 0 && o.test_fraction < 1,
                   "synthetic::Classification: test_fraction must be in [0, 1), got ",
                   o.test_fraction);
  std::mt19937_64 rng(o.seed);
  Teacher teacher(o.num_features, o.num_classes, rng);
  const double margin = kMarginFraction * std::sqrt(static_cast<double>(o.num_features));
  const auto test_size = static_cast<int64_t>(static_cast<double>(o.num_samples) * o.test_fraction);
  auto train = std::make_shared<std::vector<Sample>>();
  auto test = std::make_shared<std::vector<Sample>>();
  for (int64_t i = 0; i < o.num_samples; ++i) {
    (i < o.num_samples - test_size ? train : test)
        ->push_back(Draw(teacher, o.num_features, margin, rng));
  }
  return {FromSamples(train), FromSamples(test), static_cast<int64_t>(train->size()), test_size};
}

}  // namespace flotilla::io::synthetic
