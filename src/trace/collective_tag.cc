#include "flotilla/trace/collective_tag.h"

namespace flotilla::trace {

namespace {
thread_local int t_bucket = -1;
}  // namespace

CollectiveTag::CollectiveTag(int bucket) : previous_(t_bucket) { t_bucket = bucket; }
CollectiveTag::~CollectiveTag() { t_bucket = previous_; }
int CurrentBucket() { return t_bucket; }

}  // namespace flotilla::trace
