// Launch options with a command and nothing else: the least a node plan
// needs. Shared by the launch layer's unit tests.
#pragma once

#include "flotilla/launch/options.h"

namespace flotilla::launch {

inline LaunchOptions WithCommand() {
  LaunchOptions o;
  o.command = {"/bin/true"};
  return o;
}

}  // namespace flotilla::launch
