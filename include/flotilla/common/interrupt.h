// Interruption of long blocking calls by their host.
//
// A host that must stay responsive while Flotilla blocks (the Python
// bindings, where Ctrl-C must raise KeyboardInterrupt during exe.run or a
// collective) installs a check; the executor between ops and collective
// waits call CheckInterrupt(), which throws Cancelled when the check says
// so. Without a check installed CheckInterrupt() costs one relaxed load.
//
//   SetInterruptCheck([] { return SignalPending(); });
//   ...
//   CheckInterrupt();   // throws flotilla::Cancelled when SignalPending()
//
// Thread-safe. The check may be called from any thread that blocks in
// Flotilla and must decide for itself which threads it acts on.
#pragma once

#include <chrono>
#include <string>

#include "flotilla/common/error.h"

namespace flotilla {

// What CheckInterrupt() throws: the blocking call was stopped by its host,
// not by a failure of its own.
class Cancelled : public Error {
 public:
  explicit Cancelled(const std::string& message) : Error(ErrorCode::kCancelled, message) {}
};

// Returns true when the current blocking call should stop.
using InterruptCheck = bool (*)();

// Installs `check` (nullptr removes it). Process-wide.
void SetInterruptCheck(InterruptCheck check);

// Throws Cancelled when the installed check returns true. Calls the check
// at most once per `period` per thread, so hot loops may call this freely.
void CheckInterrupt(std::chrono::milliseconds period = std::chrono::milliseconds(20));

}  // namespace flotilla
