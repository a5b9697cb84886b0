// Linked into every libFuzzer binary (FLOTILLA_FUZZ=ON): applies
// FLOTILLA_LOG_LEVEL before the first input, so the level run_fuzzers.sh
// sets (error) silences the warning that every refused peer or bad request
// logs — millions in a campaign, which would fill the log and slow the run.
#include "flotilla/common/logging.h"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  flotilla::log::InitFromEnv();
  return 0;
}
