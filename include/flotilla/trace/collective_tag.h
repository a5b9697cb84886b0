// What the caller of a collective knows and the comm layer does not — the
// fused gradient bucket — handed down through the calling thread:
//
//   trace::CollectiveTag tag(bucket);   // in the op that starts the all-reduce
//   group->allreduceAsync(...);         // the record carries the bucket
#pragma once

namespace flotilla::trace {

class CollectiveTag {
 public:
  explicit CollectiveTag(int bucket);
  ~CollectiveTag();
  CollectiveTag(const CollectiveTag&) = delete;
  CollectiveTag& operator=(const CollectiveTag&) = delete;

 private:
  int previous_;
};

// The calling thread's innermost tag's bucket, -1 without one.
int CurrentBucket();

}  // namespace flotilla::trace
