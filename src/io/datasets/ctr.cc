#include "flotilla/io/datasets/ctr.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"

namespace flotilla::io::ctr {

namespace {

uint64_t Mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double Uniform01(uint64_t h) { return (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53; }

// A standard normal that is a pure function of the hash (Box-Muller).
double Normal(uint64_t h) {
  double u1 = Uniform01(Mix(h)), u2 = Uniform01(Mix(h ^ 0x5bd1e995));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Inverse CDF of a continuous power law on [1, vocab + 1), shifted to ranks.
int64_t PowerLawRank(double u, int64_t vocab, double s) {
  double a = 1.0 - s;
  double x = std::pow((std::pow(static_cast<double>(vocab) + 1.0, a) - 1.0) * u + 1.0, 1.0 / a);
  return std::clamp<int64_t>(static_cast<int64_t>(x) - 1, 0, vocab - 1);
}

// Ranks are scattered over the slot's id space so frequent ids are not small.
int64_t IdOfRank(int64_t rank, int slot, int64_t vocab) {
  return static_cast<int64_t>(Mix(static_cast<uint64_t>(rank) * 131 + slot) % static_cast<uint64_t>(vocab));
}

float Sigmoid(double z) { return static_cast<float>(1.0 / (1.0 + std::exp(-z))); }

}  // namespace

CtrGenerator::CtrGenerator(GeneratorOptions options, uint64_t seed)
    : options_(options), seed_(seed) {
  FLOTILLA_ENFORCE(options_.vocab_per_slot > 0 && options_.zipf_exponent != 1.0,
                   "CtrGenerator: vocab_per_slot must be positive and zipf_exponent != 1");
  for (int j = 0; j < kDenseFeatures; ++j) {
    dense_weights_.push_back(options_.dense_scale * static_cast<float>(Normal(Mix(options_.model_seed * 977 + j))));
  }
}

CtrBatch CtrGenerator::Next(int64_t n) {
  CtrBatch b{Tensor(DType::kFloat32, {n, kDenseFeatures}), Tensor(DType::kInt64, {n, kSlots}),
             Tensor(DType::kFloat32, {n, 1}), std::vector<float>(static_cast<size_t>(n))};
  float* dense = b.dense.mutable_data<float>();
  int64_t* ids = b.ids.mutable_data<int64_t>();
  float* label = b.label.mutable_data<float>();
  const int64_t vocab = options_.vocab_per_slot;
  for (int64_t i = 0; i < n; ++i, ++index_) {
    uint64_t h = Mix(Mix(seed_) ^ index_);
    double z = options_.bias;
    for (int j = 0; j < kDenseFeatures; ++j) {
      float x = static_cast<float>(Normal(h + 1000 + j));
      dense[i * kDenseFeatures + j] = x;
      z += dense_weights_[j] * x;
    }
    for (int s = 0; s < kSlots; ++s) {
      int64_t rank = PowerLawRank(Uniform01(Mix(h + 2000 + s)), vocab, options_.zipf_exponent);
      ids[i * kSlots + s] = s * vocab + IdOfRank(rank, s, vocab);
      if (rank < options_.head_ids) {
        z += options_.sparse_scale * Normal(Mix(options_.model_seed * 7919 + s * 1000003 + rank));
      }
    }
    float p = Sigmoid(z);
    b.truth[i] = p;
    label[i] = Uniform01(Mix(h + 3000)) < p ? 1.0f : 0.0f;
  }
  return b;
}

double Auc(const std::vector<float>& scores, const std::vector<float>& labels) {
  FLOTILLA_ENFORCE_EQ(scores.size(), labels.size(), "Auc: scores and labels differ in length");
  // NaN scores (a diverged model) rank lowest, so the sort stays well defined.
  std::vector<float> key(scores);
  for (float& k : key) {
    if (std::isnan(k)) k = -std::numeric_limits<float>::infinity();
  }
  std::vector<size_t> order(key.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key[a] < key[b]; });
  double pos = 0, neg = 0, rank_sum = 0;
  for (size_t i = 0; i < order.size();) {
    size_t j = i + 1;
    while (j < order.size() && key[order[j]] == key[order[i]]) ++j;
    double mid_rank = (static_cast<double>(i) + static_cast<double>(j) + 1) / 2;  // 1-based average
    for (size_t k = i; k < j; ++k) {
      if (labels[order[k]] > 0.5f) { rank_sum += mid_rank; ++pos; } else { ++neg; }
    }
    i = j;
  }
  if (pos == 0 || neg == 0) return 0.5;
  return (rank_sum - pos * (pos + 1) / 2) / (pos * neg);
}

namespace {

void ParseCriteoLine(const std::string& line, int64_t row, const CriteoOptions& opt,
                     int64_t line_number, CtrBatch& b) {
  std::vector<std::string> f = Split(line, '\t', /*skip_empty=*/false);
  FLOTILLA_CHECK(f.size() == 1 + kDenseFeatures + kSlots, InvalidArgument, "Criteo line ",
                 line_number, ": expected 40 tab-separated fields, got ", f.size());
  b.label.data<float>()[row] = f[0] == "1" ? 1.0f : 0.0f;
  for (int j = 0; j < kDenseFeatures; ++j) {
    const std::string& v = f[1 + j];
    double x = v.empty() ? 0.0 : std::max<double>(0.0, std::strtod(v.c_str(), nullptr));
    b.dense.data<float>()[row * kDenseFeatures + j] = static_cast<float>(std::log1p(x));
  }
  for (int s = 0; s < kSlots; ++s) {
    const std::string& v = f[1 + kDenseFeatures + s];
    uint64_t raw = v.empty() ? 0 : Mix(std::strtoull(v.c_str(), nullptr, 16) + 1);
    int64_t id = v.empty() ? 0 : static_cast<int64_t>(raw % static_cast<uint64_t>(opt.vocab_per_slot));
    b.ids.data<int64_t>()[row * kSlots + s] = s * opt.vocab_per_slot + id;
  }
}

}  // namespace

std::optional<CtrBatch> ReadCriteo(std::istream& in, int64_t batch_size, const CriteoOptions& options,
                                   int64_t* line_number) {
  std::vector<std::string> lines;
  std::string line;
  while (static_cast<int64_t>(lines.size()) < batch_size && std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(std::move(line));
  }
  if (lines.empty()) return std::nullopt;
  int64_t n = static_cast<int64_t>(lines.size());
  CtrBatch b{Tensor(DType::kFloat32, {n, kDenseFeatures}), Tensor(DType::kInt64, {n, kSlots}),
             Tensor(DType::kFloat32, {n, 1}), {}};
  for (int64_t i = 0; i < n; ++i) ParseCriteoLine(lines[i], i, options, ++*line_number, b);
  return b;
}

}  // namespace flotilla::io::ctr
