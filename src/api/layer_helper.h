// LayerHelper: the plumbing every layer shares — where ops go (the default
// main program), where parameters are initialised (the default startup
// program), and fresh names for temporaries.
#pragma once

#include <string>

#include "flotilla/api/param_attr.h"
#include "flotilla/framework/program.h"

namespace flotilla::layers::internal {

class LayerHelper {
 public:
  explicit LayerHelper(std::string layer_type);

  Block& main_block() const { return default_main_program().global_block(); }
  Block& startup_block() const { return default_startup_program().global_block(); }

  // A fresh non-persistable variable "<layer>_N.tmp_M" of dtype.
  Variable CreateTmp(DType dtype, const std::string& suffix = "tmp");
  // A parameter in main (persistable, is_parameter) and its initializer in
  // startup. Name from attr or "<layer>_N.w_K" / ".b_K".
  Variable CreateParameter(const ParamAttr& attr, const Dims& shape, DType dtype, bool is_bias,
                           initializer::InitializerPtr default_init);
  // Appends op to the main block and returns it.
  OpDesc& Append(OpDesc op);
  // Applies activation `act` ("" = none; relu, tanh, sigmoid, softmax, relu6,
  // hard_swish with their default attributes) to x.
  Variable Activate(const Variable& x, const std::string& act);

  const std::string& name() const { return name_; }

 private:
  std::string type_;
  std::string name_;
  int tmp_count_ = 0;
  int w_count_ = 0;
  int b_count_ = 0;
};

// The single-input, single-output op pattern: out = op(X=x).
Variable UnaryOp(const std::string& type, const Variable& x, AttributeMap attrs = {});

}  // namespace flotilla::layers::internal
