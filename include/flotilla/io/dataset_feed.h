// A Dataset batch as executor feeds (Paddle's MultiSlot data feed): one
// tensor per slot, named as the slot's variable.
//
// - A sequence slot (SlotSpec::dense_shape empty) is its packed values as a
//   [values, 1] tensor (int64 or float32) whose level-1 LoD is its offsets
//   (records + 1 of them), also given in SlotFeeds::offsets.
// - A dense slot is its values reshaped to dense_shape with -1 the batch
//   size; every record must hold the same count (the product of the other
//   dimensions), else InvalidArgument names the slot and the record.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "flotilla/framework/executor.h"
#include "flotilla/io/multislot.h"

namespace flotilla::io {

struct SlotFeeds {
  FeedMap tensors;                                      // slot name → values
  std::map<std::string, std::vector<int64_t>> offsets;  // sequence slot name → offsets
};

// Copies `batch` into new tensors. Thread-safe (no shared state).
SlotFeeds ToFeeds(const SlotColumns& batch);

}  // namespace flotilla::io
