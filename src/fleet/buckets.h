// Gradient buckets: which variables one fused all-reduce carries and on
// which communicator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flotilla/core/dtype.h"

namespace flotilla::fleet {

struct BucketItem {
  std::string name;
  int64_t bytes = 0;
  DType dtype = DType::kFloat32;
};

struct Bucket {
  std::vector<std::string> vars;
  int64_t bytes = 0;
  int comm = 0;  // communicator index
};

// Groups `items` in order: with fuse, consecutive items of one dtype share a
// bucket until adding the next would exceed cap_bytes (an item larger than
// the cap gets a bucket of its own); without, one bucket per item. Buckets
// go round-robin over comm_num communicators.
std::vector<Bucket> MakeBuckets(const std::vector<BucketItem>& items, bool fuse, int64_t cap_bytes,
                                int comm_num);

}  // namespace flotilla::fleet
