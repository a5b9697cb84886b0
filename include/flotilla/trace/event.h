// Event: one record of the timeline, as a thread's buffer holds it. Plain
// data, 144 bytes; strings are interned ids (names.h), argument keys are
// string literals.
#pragma once

#include <cstdint>

#include "flotilla/trace/names.h"

namespace flotilla::trace {

// What an event is about; the timeline's "cat" field.
enum class Category : uint8_t {
  kOp,          // an executor op (name: op type; args: output)
  kCollective,  // a collective on a communicator thread (kind, bytes, seq, ...)
  kCommWait,    // a caller waiting for a collective (seq, bucket)
  kQueue,       // work queued before it ran (communicator queues)
  kRpc,         // a parameter-server call as the trainer sees it (method, table, ...)
  kRpcCall,     // one server's part of a call (server, endpoint)
  kServe,       // a call handled by a parameter server
  kReader,      // waiting for input data
  kCheckpoint,  // saving or loading a checkpoint
  kElastic,     // rendezvous, membership change, restore
  kLauncher,    // the launcher's own events (process start, exit)
  kStep,        // one run of a program
  kCounter,     // a counter sample
};
inline constexpr int kCategoryCount = 13;
const char* CategoryName(Category c);

struct Event {
  static constexpr int kMaxArgs = 7;
  struct Arg {
    const char* key;  // a string literal
    int64_t value;    // an integer, a NameId, or a double's bits (see masks)
  };

  int64_t start_ns;  // MonoNs()
  int64_t end_ns;    // == start_ns for instants and counters
  NameId name;
  uint32_t track;    // 0: the recording thread's row; else a virtual row (track.h)
  Category cat;
  char phase;        // 'X' span, 'i' instant, 'C' counter
  uint8_t nargs;
  uint8_t name_args;    // bit i: args[i].value is a NameId
  uint8_t double_args;  // bit i: args[i].value holds a double
  Arg args[kMaxArgs];
};

}  // namespace flotilla::trace
