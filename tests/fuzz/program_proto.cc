// Fuzzes Program protobufs as loaded from disk (inference models, saved
// programs): Parse, then what a loader does next — clone for test, prune to
// a variable, print. A program that parses must serialise to bytes that
// parse back to the same serialisation.
#include <cstdlib>

#include "flotilla/common/error.h"
#include "flotilla/framework/program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    flotilla::Program program = flotilla::Program::Parse(bytes, "fuzz input");
    const std::string once = program.Serialize();
    if (flotilla::Program::Parse(once, "reserialised program").Serialize() != once) std::abort();
    (void)program.DebugString();
    (void)program.Clone(/*for_test=*/true).Serialize();
    const auto& names = program.global_block().var_names();
    if (!names.empty()) (void)program.Prune({names.back()}).Serialize();
  } catch (const flotilla::Error&) {
    // refused with a named error
  }
  return 0;
}
