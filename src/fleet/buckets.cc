#include "fleet/buckets.h"

namespace flotilla::fleet {

std::vector<Bucket> MakeBuckets(const std::vector<BucketItem>& items, bool fuse, int64_t cap_bytes,
                                int comm_num) {
  std::vector<Bucket> buckets;
  DType last_dtype = DType::kFloat32;
  for (const BucketItem& item : items) {
    bool fits = fuse && !buckets.empty() && item.dtype == last_dtype &&
                buckets.back().bytes + item.bytes <= cap_bytes;
    if (!fits) buckets.push_back({.comm = static_cast<int>(buckets.size()) % comm_num});
    buckets.back().vars.push_back(item.name);
    buckets.back().bytes += item.bytes;
    last_dtype = item.dtype;
  }
  return buckets;
}

}  // namespace flotilla::fleet
