#include "flotilla/io/data_feeder.h"

#include <cstring>

#include "flotilla/common/enforce.h"
#include "flotilla/common/strings.h"
#include "flotilla/core/lod.h"

namespace flotilla::io {

DataFeeder::DataFeeder(const std::vector<Variable>& feed_list, Place place)
    : place_(std::move(place)) {
  FLOTILLA_ENFORCE(!feed_list.empty(), "DataFeeder: the feed list is empty");
  for (const Variable& v : feed_list) {
    FLOTILLA_ENFORCE(v.valid(), "DataFeeder: feed list holds an invalid variable");
    FLOTILLA_ENFORCE(!v.shape().empty(), "DataFeeder: feed variable '", v.name(),
                     "' has no batch dimension (shape [])");
    Dims sample_dims(v.shape().begin() + 1, v.shape().end());
    slots_.push_back(Slot{v.name(), v.dtype(), std::move(sample_dims), v.desc().lod_level});
    names_.push_back(v.name());
  }
}

FeedMap DataFeeder::Feed(const std::vector<Sample>& batch) const {
  FLOTILLA_ENFORCE(!batch.empty(), "DataFeeder: the batch is empty");
  for (size_t i = 0; i < batch.size(); ++i) {
    FLOTILLA_ENFORCE_EQ(batch[i].size(), slots_.size(), "DataFeeder: sample ", i,
                        " has the wrong number of fields for the feed list (",
                        Join(names_, ", "), ")");
  }
  FeedMap feed;
  for (size_t s = 0; s < slots_.size(); ++s) feed.emplace(slots_[s].name, FeedSlot(s, batch));
  return feed;
}

// Checks every sample's field against the slot, then copies them into one
// [batch, ...] tensor.
Tensor DataFeeder::FeedSlot(size_t s, const std::vector<Sample>& batch) const {
  const Slot& slot = slots_[s];
  if (slot.lod_level == 1) return FeedSequences(s, batch);
  if (slot.lod_level > 1) return FeedNested(s, batch);
  const Tensor& first = batch[0][s];
  // Unknown inner dims (-1) take the first sample's shape.
  bool unknown = Numel(slot.sample_dims) < 0;
  const Dims& sample_dims =
      unknown && DimsCompatible(slot.sample_dims, first.dims()) ? first.dims() : slot.sample_dims;
  const int64_t numel = Numel(sample_dims);
  for (size_t i = 0; i < batch.size(); ++i) {
    const Tensor& field = batch[i][s];
    FLOTILLA_ENFORCE(field.dtype() == slot.dtype && field.numel() == numel && field.initialized(),
                     "DataFeeder: feed variable '", slot.name, "' expects each sample to be ",
                     DTypeName(slot.dtype), " of shape ", DimsToString(sample_dims),
                     ", but sample ", i, " holds ", DTypeName(field.dtype()), " of shape ",
                     DimsToString(field.dims()));
  }
  Dims dims{static_cast<int64_t>(batch.size())};
  dims.insert(dims.end(), sample_dims.begin(), sample_dims.end());
  Tensor out(slot.dtype, dims, place_);
  auto* dst = static_cast<char*>(out.raw_mutable_data(slot.dtype));
  const size_t row_bytes = static_cast<size_t>(numel) * SizeOf(slot.dtype);
  for (size_t i = 0; i < batch.size(); ++i) {
    std::memcpy(dst + i * row_bytes, batch[i][s].raw_data(), row_bytes);
  }
  return out;
}

// Packs every sample's sequence of rows into one tensor with their offsets.
Tensor DataFeeder::FeedSequences(size_t s, const std::vector<Sample>& batch) const {
  const Slot& slot = slots_[s];
  FLOTILLA_ENFORCE(Numel(slot.sample_dims) > 0, "DataFeeder: sequence variable '", slot.name,
                   "' needs a known row shape, got ", DimsToString(slot.sample_dims));
  const int64_t row = Numel(slot.sample_dims);
  LoDLevel offsets{0};
  for (size_t i = 0; i < batch.size(); ++i) {
    const Tensor& field = batch[i][s];
    FLOTILLA_ENFORCE(field.dtype() == slot.dtype && field.numel() % row == 0 &&
                         (field.initialized() || field.numel() == 0),
                     "DataFeeder: sequence variable '", slot.name, "' expects each sample to be ",
                     DTypeName(slot.dtype), " rows of shape ", DimsToString(slot.sample_dims),
                     ", but sample ", i, " holds ", DTypeName(field.dtype()), " of shape ",
                     DimsToString(field.dims()));
    offsets.push_back(offsets.back() + field.numel() / row);
  }
  Dims dims{offsets.back()};
  dims.insert(dims.end(), slot.sample_dims.begin(), slot.sample_dims.end());
  Tensor out(slot.dtype, dims, place_);
  auto* dst = static_cast<char*>(out.raw_mutable_data(slot.dtype));
  const size_t row_bytes = static_cast<size_t>(row) * SizeOf(slot.dtype);
  for (size_t i = 0; i < batch.size(); ++i) {
    const size_t bytes = static_cast<size_t>(offsets[i + 1] - offsets[i]) * row_bytes;
    if (bytes > 0) std::memcpy(dst + static_cast<size_t>(offsets[i]) * row_bytes, batch[i][s].raw_data(), bytes);
  }
  out.set_lod({std::move(offsets)});
  return out;
}

// lod_level L > 1: each sample's rows carry L - 1 levels of offsets (its
// own nesting); the batch's level 0 counts each sample's outermost items and
// its level j the samples' level j - 1, shifted past the samples before.
Tensor DataFeeder::FeedNested(size_t s, const std::vector<Sample>& batch) const {
  const Slot& slot = slots_[s];
  const size_t inner = static_cast<size_t>(slot.lod_level - 1);
  LoD lod(slot.lod_level, LoDLevel{0});
  for (size_t i = 0; i < batch.size(); ++i) {
    const Tensor& field = batch[i][s];
    const int64_t rows = field.rank() ? field.dim(0) : 0;
    FLOTILLA_ENFORCE(field.lod().size() == inner && IsValidLoD(field.lod(), rows), "DataFeeder: variable '",
                     slot.name, "' has lod_level ", slot.lod_level, ": sample ", i, " must hold ", inner,
                     " level(s) of sequence offsets describing its ", rows, " rows, got ", field.lod().size());
    lod[0].push_back(lod[0].back() + static_cast<int64_t>(field.lod()[0].size()) - 1);
    for (size_t j = 0; j < inner; ++j) {
      const int64_t base = lod[j + 1].back();
      const LoDLevel& own = field.lod()[j];
      for (size_t k = 1; k < own.size(); ++k) lod[j + 1].push_back(base + own[k]);
    }
  }
  Tensor out = FeedSequences(s, batch);  // the rows, packed and checked
  out.set_lod(std::move(lod));
  return out;
}

}  // namespace flotilla::io
