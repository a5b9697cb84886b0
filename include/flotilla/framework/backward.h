// Automatic differentiation of a static program (Paddle's append_backward).
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "flotilla/framework/program.h"

namespace flotilla {

using ParamGrad = std::pair<Variable, Variable>;

// Appends to loss's block the ops computing d(loss)/d(v) for every trainable
// parameter (or those in `parameter_list`), starting from a fill of 1.0.
// Gradients of a variable with several consumers are summed; variables with
// stop_gradient, or in `no_grad_set`, get none. Returns (param, grad) pairs
// in parameter creation order. Grad ops carry op_role Backward and
// op_role_var [param, grad] on the op that finally produces each grad.
std::vector<ParamGrad> AppendBackward(const Variable& loss,
                                      const std::vector<std::string>& parameter_list = {},
                                      const std::set<std::string>& no_grad_set = {});

}  // namespace flotilla
