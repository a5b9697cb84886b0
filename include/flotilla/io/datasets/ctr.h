// CTR data for wide & deep: a synthetic generator with a known
// logistic ground truth, and a reader of Criteo-format text lines.
//
// A sample has 13 dense features, 26 categorical ids and a 0/1 click label.
// The generator draws ids per slot from a power law over `vocab_per_slot`
// possible ids (millions by default: most are rare, a few are frequent) and
// the label from sigmoid(bias + w·dense + Σ_slot v(slot, id)), where v is
// large only for the most frequent ids. Since it knows each sample's true
// click probability, it reports the Bayes-optimal AUC: the AUC of the true
// probabilities on the same samples, which no model can beat in expectation.
//
// Ids are global: slot s's ids live in [s · vocab_per_slot, (s+1) · vocab_per_slot),
// so one embedding table of height kCtrSlots · vocab_per_slot serves every slot.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "flotilla/core/tensor.h"

namespace flotilla::io::ctr {

inline constexpr int kDenseFeatures = 13;
inline constexpr int kSlots = 26;

struct CtrBatch {
  Tensor dense;  // [N, 13] float32
  Tensor ids;    // [N, 26] int64, global ids
  Tensor label;  // [N, 1] float32, 0 or 1
  std::vector<float> truth;  // true click probability per sample (synthetic only)
  int64_t size() const { return label.numel(); }
};

struct GeneratorOptions {
  int64_t vocab_per_slot = 1'000'000;
  double zipf_exponent = 1.1;  // P(rank r) ∝ (r+1)^-exponent
  int64_t head_ids = 50;       // ranks with a real effect; the tail has none
  float sparse_scale = 0.3f;   // std of a head id's effect
  float dense_scale = 0.6f;    // std of a dense weight
  float bias = -1.0f;
  uint64_t model_seed = 7;     // the ground truth (weights)
};

// A deterministic stream of samples: sample i of stream `seed` depends only
// on (options, seed, i). Not thread-safe; one per reader.
class CtrGenerator {
 public:
  CtrGenerator(GeneratorOptions options, uint64_t seed);
  CtrBatch Next(int64_t batch_size);
  int64_t height() const { return kSlots * options_.vocab_per_slot; }
  const GeneratorOptions& options() const { return options_; }

 private:
  GeneratorOptions options_;
  uint64_t seed_;
  uint64_t index_ = 0;
  std::vector<float> dense_weights_;
};

// The AUC of scores against 0/1 labels (ties count one half). Returns 0.5
// when one class is absent.
double Auc(const std::vector<float>& scores, const std::vector<float>& labels);

// Criteo text: "label \t I1..I13 \t C1..C26" — integers (may be empty) and
// 8-hex-digit categoricals (may be empty). Dense values become log(1 + max(x, 0));
// categoricals are hashed into their slot's vocab_per_slot ids (empty → id 0
// of the slot). Throws InvalidArgument naming the line number for a line
// without 40 fields.
struct CriteoOptions {
  int64_t vocab_per_slot = 1'000'000;
};
// Reads up to batch_size lines; nullopt at end of input.
std::optional<CtrBatch> ReadCriteo(std::istream& in, int64_t batch_size, const CriteoOptions& options,
                                   int64_t* line_number);

}  // namespace flotilla::io::ctr
