// The engine behind AppendBackward, also used by the gradient-check harness.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "flotilla/framework/program.h"

namespace flotilla::internal {

// Appends gradient ops to `block` for every op on a path from a variable
// that requires a gradient to one of `targets`, assuming "<target>@GRAD"
// already holds (or will be fed) each target's upstream gradient. Returns
// forward variable → the name of its gradient, for every variable that got
// one. Variables in `no_grad` (and those with stop_gradient) get none.
std::map<std::string, std::string> AppendBackwardOps(Block& block,
                                                     const std::vector<std::string>& targets,
                                                     const std::set<std::string>& no_grad);

}  // namespace flotilla::internal
