// The rank helper (comm_rank_helper) of the comm multi-process tests, started
// as a process the test owns (flotilla/testing/process.h).
#pragma once

#include <string>
#include <vector>

#include "flotilla/testing/process.h"

namespace flotilla::comm {

// Path of comm_rank_helper in the build tree.
std::string RankHelperPath();

// Starts `argv` (the helper, maybe under `ip netns exec`), named `name` in
// messages ("gloo rank 1"), its stdout and stderr captured together (read by
// Stdout()). Throws as testing::Process does.
testing::Process StartRank(std::vector<std::string> argv, std::string name);

}  // namespace flotilla::comm
