#include "flotilla/io/dataset_feed.h"

#include "flotilla/common/enforce.h"

namespace flotilla::io {
namespace {

Tensor ValuesTensor(const SlotSpec& spec, const SlotValues& values, Dims dims) {
  if (spec.type == SlotType::kInt64) return Tensor::FromVector<int64_t>(values.int64s, std::move(dims));
  return Tensor::FromVector<float>(values.floats, std::move(dims));
}

// dense_shape with -1 replaced by `records`; checks every record's count.
Dims DenseDims(const SlotSpec& spec, const SlotValues& values, int64_t records) {
  Dims dims;
  int64_t per_record = 1;
  bool has_batch_dim = false;
  for (int64_t d : spec.dense_shape) {
    dims.push_back(d < 0 ? records : d);
    if (d >= 0) per_record *= d;
    has_batch_dim = has_batch_dim || d < 0;
  }
  if (!has_batch_dim) dims.insert(dims.begin(), records);
  for (int64_t r = 0; r < records; ++r) {
    const int64_t count = values.offsets[r + 1] - values.offsets[r];
    FLOTILLA_ENFORCE(count == per_record, "dense slot '", spec.name, "' of shape ",
                     DimsToString(spec.dense_shape), " expects ", per_record, " value(s) per record, record ", r,
                     " of the batch holds ", count);
  }
  return dims;
}

}  // namespace

SlotFeeds ToFeeds(const SlotColumns& batch) {
  SlotFeeds feeds;
  const int64_t records = batch.records();
  for (size_t s = 0; s < batch.specs.size(); ++s) {
    const SlotSpec& spec = batch.specs[s];
    const SlotValues& values = batch.slots[s];
    if (spec.dense_shape.empty()) {
      feeds.tensors[spec.name] = ValuesTensor(spec, values, {values.offsets.back(), 1}).set_lod({values.offsets});
      feeds.offsets[spec.name] = values.offsets;
    } else {
      feeds.tensors[spec.name] = ValuesTensor(spec, values, DenseDims(spec, values, records));
    }
  }
  return feeds;
}

}  // namespace flotilla::io
