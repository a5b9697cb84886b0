// Test helper for the math, elementwise, reduce and tensor op families:
// compile-time shape inference on a program whose inputs may have unknown
// (-1) batch dims.
#pragma once

#include <map>
#include <string>

#include "flotilla/framework/op_registry.h"
#include "flotilla/framework/program.h"

namespace flotilla::testing {

// Declares float32 inputs with `inputs`' dims, appends `op` (which runs its
// shape inference, throwing as the op would) and returns the dims inferred
// for variable `out`.
inline Dims InferredDims(const OpDesc& op, const std::map<std::string, Dims>& inputs,
                         const std::string& out) {
  RegisterAllOps();
  Program program;
  Block& block = program.global_block();
  for (const auto& [name, dims] : inputs) block.CreateVar(name).shape = dims;
  block.AppendOp(op);
  return block.Var(out).shape;
}

}  // namespace flotilla::testing
