// ParamAttr: how a layer creates one of its parameters (Paddle's
// fluid.ParamAttr). A default ParamAttr lets the layer pick name and
// initializer; ParamAttr::None() means "no such parameter" (bias_attr=False).
#pragma once

#include <string>

#include "flotilla/api/initializer.h"
#include "flotilla/api/regularizer.h"

namespace flotilla {

struct ParamAttr {
  std::string name;                          // empty: a unique name
  initializer::InitializerPtr initializer;   // null: the layer's default
  bool trainable = true;                     // false: stop_gradient
  bool enabled = true;
  // Weight decay of this parameter alone; overrides the optimizer's
  // regularization. Null: the optimizer's.
  regularizer::RegularizerPtr regularizer;
  // Multiplies the optimizer's learning rate for this parameter (Paddle's
  // ParamAttr.learning_rate). Creating a parameter again under its name
  // sets it again, as in Paddle.
  float learning_rate = 1.0f;

  static ParamAttr None() {
    ParamAttr a;
    a.enabled = false;
    return a;
  }
  static ParamAttr Named(std::string n, initializer::InitializerPtr init = nullptr) {
    ParamAttr a;
    a.name = std::move(n);
    a.initializer = std::move(init);
    return a;
  }
};

}  // namespace flotilla
