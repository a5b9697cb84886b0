// Fuzzes DistributedStrategy text (protobuf text format, as in a
// strategy.prototxt): FromText parses and validates; a strategy accepted
// must print (ToText) to text that parses back to the same strategy.
#include <cstdlib>

#include "flotilla/common/error.h"
#include "flotilla/fleet/distributed_strategy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using flotilla::fleet::DistributedStrategy;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    DistributedStrategy s = DistributedStrategy::FromText(text, "fuzz input");
    const std::string printed = s.ToText();
    if (DistributedStrategy::FromText(printed, "printed strategy").ToText() != printed) std::abort();
    (void)s.comm_num();
  } catch (const flotilla::Error&) {
    // refused with a named error
  }
  return 0;
}
