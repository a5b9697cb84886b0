// The common case of OpRegistry::RegisterWithGrad: an op with one CPU
// kernel and default attributes, and its "<type>_grad" op built from
// `grad` (a family's slots, e.g. conv's Input/Filter → Output).
#pragma once

#include <string>
#include <utility>

#include "flotilla/framework/op_registry.h"

namespace flotilla::ops {

inline void RegisterKernelWithGrad(OpRegistry& r, const std::string& type, InferShapeFn shape, KernelFn forward,
                                   AttributeMap defaults, GradSlots grad, KernelFn backward) {
  r.RegisterWithGrad({.type = type,
                      .infer_shape = std::move(shape),
                      .kernels = {{Place::Kind::kCPU, std::move(forward)}},
                      .default_attrs = std::move(defaults)},
                     std::move(grad), std::move(backward));
}

}  // namespace flotilla::ops
