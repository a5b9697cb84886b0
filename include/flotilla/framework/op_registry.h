// The op registry: for each op type, its compile-time shape inference, its
// kernels (one per Place kind; CPU today), its default attributes and, when
// differentiable, the maker of its gradient ops.
//
// Registration is explicit: RegisterAllOps() (ops/register_all_ops.cc) calls
// each op file's Register*Ops() function. No static initialisers.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "flotilla/core/place.h"
#include "flotilla/framework/desc.h"
#include "flotilla/framework/scope.h"

namespace flotilla {

class Block;
class InferShapeContext;
class ExecutionContext;

using InferShapeFn = std::function<void(InferShapeContext&)>;
using KernelFn = std::function<void(ExecutionContext&)>;
// Returns the gradient ops of one forward op. Their inputs may name the
// forward op's inputs and outputs and "<out>@GRAD"; their outputs are
// "<in>@GRAD". Backward renames, prunes and accumulates them.
using GradOpMaker = std::function<std::vector<OpDesc>(const OpDesc& forward)>;

struct OpInfo {
  std::string type;
  InferShapeFn infer_shape;
  std::map<Place::Kind, KernelFn> kernels;
  GradOpMaker grad_maker;      // empty: not differentiable
  AttributeMap default_attrs;  // filled into ops that do not set them
  // Inputs whose gradients are never produced (labels, ids, learning rate).
  std::vector<std::string> no_grad_inputs;
  // (input slot, output slot) pairs, Paddle's ShareLoD: after every run of a
  // kernel the output takes the input's sequence offsets (or drops its own
  // when the input has none or their rows differ), and at build time the
  // output variable takes the input's lod_level. Applied by Register, so
  // every runner of the kernel gets it.
  std::vector<std::pair<std::string, std::string>> share_lod;

  bool differentiable() const { return static_cast<bool>(grad_maker); }
};

// What the usual gradient op "<type>_grad" of an op reads and writes (see
// GradOpBuilder): the forward op's inputs and outputs it reads under their
// own slots, the gradients of forward outputs it reads ("Out@GRAD") and the
// gradients of forward inputs it writes ("X@GRAD").
struct GradSlots {
  std::vector<std::string> forward_inputs;
  std::vector<std::string> forward_outputs;
  std::vector<std::string> output_grads;
  std::vector<std::string> input_grads;
  // The gradient op's shape inference; empty: InferGradShapeLikeForward.
  InferShapeFn infer_shape = nullptr;
};

class OpRegistry {
 public:
  static OpRegistry& Global();
  // Throws AlreadyExists when `info.type` is registered.
  void Register(OpInfo info);
  // Registers `forward` (its grad_maker must be empty) with a grad maker
  // building "<type>_grad" from `grad`, and that op with the CPU kernel
  // `grad_kernel` and the forward's default attributes. Throws AlreadyExists
  // as Register does.
  void RegisterWithGrad(OpInfo forward, GradSlots grad, KernelFn grad_kernel);
  // Throws NotFound "op 'x' is not registered".
  const OpInfo& Get(const std::string& type) const;
  const OpInfo* Find(const std::string& type) const;
  std::vector<std::string> Types() const;

 private:
  std::map<std::string, OpInfo> ops_;
};

// Registers every built-in op once; later calls do nothing. Thread-safe.
void RegisterAllOps();

// Compile-time view of one op in a block, for shape inference.
class InferShapeContext {
 public:
  InferShapeContext(const OpDesc& op, Block& block) : op_(op), block_(block) {}

  const OpDesc& op() const { return op_; }
  bool HasInput(const std::string& slot) const { return op_.HasInput(slot); }
  bool HasOutput(const std::string& slot) const { return op_.HasOutput(slot); }
  Dims InputDim(const std::string& slot, size_t i = 0) const;
  std::vector<Dims> InputDims(const std::string& slot) const;
  DType InputDType(const std::string& slot, size_t i = 0) const;
  VarType InputVarType(const std::string& slot, size_t i = 0) const;
  int InputLoDLevel(const std::string& slot, size_t i = 0) const;
  // Setters skip @EMPTY@ arguments and create missing output variables.
  void SetOutputDim(const std::string& slot, const Dims& dims, size_t i = 0);
  void SetOutputDType(const std::string& slot, DType dtype, size_t i = 0);
  void SetOutputVarType(const std::string& slot, VarType type, size_t i = 0);
  void SetOutputLoDLevel(const std::string& slot, int level, size_t i = 0);
  // Output i of out_slot gets the dims and dtype of input i of in_slot.
  void ShareDim(const std::string& in_slot, const std::string& out_slot, size_t i = 0);
  template <typename T> T Attr(const std::string& name) const { return op_.Attr<T>(name); }
  // "op 'mul'" plus its arguments, for error messages.
  std::string Where() const;

 private:
  VarDesc* OutputVar(const std::string& slot, size_t i);
  const OpDesc& op_;
  Block& block_;
};

// Shape inference for a gradient op whose outputs "<X>@GRAD" take the dims,
// dtype and var type of its inputs "<X>".
void InferGradShapeLikeForward(InferShapeContext& ctx);

// Runtime variables of one op, resolved once per prepared program.
struct RuntimeContext {
  std::map<std::string, std::vector<ScopeVar*>> inputs;   // nullptr for @EMPTY@
  std::map<std::string, std::vector<ScopeVar*>> outputs;
};

// What a kernel sees: its op, resolved variables, place and scope.
class ExecutionContext {
 public:
  ExecutionContext(const OpDesc& op, const RuntimeContext& rt, Scope& scope, const Place& place)
      : op_(op), rt_(rt), scope_(scope), place_(place) {}

  const OpDesc& op() const { return op_; }
  const Place& place() const { return place_; }
  Scope& scope() const { return scope_; }
  bool HasInput(const std::string& slot) const;
  bool HasOutput(const std::string& slot) const;
  size_t InputSize(const std::string& slot) const;

  // Tensor input i of `slot`; throws InvalidArgument naming the op, slot and
  // variable when it is absent or holds no data.
  const Tensor& Input(const std::string& slot, size_t i = 0) const;
  std::vector<const Tensor*> MultiInput(const std::string& slot) const;
  Tensor* Output(const std::string& slot, size_t i = 0) const;
  std::vector<Tensor*> MultiOutput(const std::string& slot) const;
  // The variables themselves, for SelectedRows and objects; nullptr when the
  // argument is @EMPTY@ or the slot is absent.
  ScopeVar* InputVar(const std::string& slot, size_t i = 0) const;
  ScopeVar* OutputVar(const std::string& slot, size_t i = 0) const;
  const std::string& InputName(const std::string& slot, size_t i = 0) const;
  const std::string& OutputName(const std::string& slot, size_t i = 0) const;
  template <typename T> T Attr(const std::string& name) const { return op_.Attr<T>(name); }
  template <typename T> T AttrOr(const std::string& name, T v) const { return op_.AttrOr<T>(name, v); }
  std::string Where() const;

 private:
  const OpDesc& op_;
  const RuntimeContext& rt_;
  Scope& scope_;
  const Place& place_;
};

// Builds the usual gradient op of `forward`:
//   GradOpBuilder(fwd, "mul_grad").ForwardInputs({"X","Y"}).OutputGrads({"Out"})
//       .InputGrads({"X","Y"}).Build();
// ForwardInputs/Outputs pass the forward arguments under the same slot;
// OutputGrads adds slot "Out@GRAD" = Out's names + "@GRAD"; InputGrads adds
// output slot "X@GRAD" = X's names + "@GRAD". Attributes are copied.
class GradOpBuilder {
 public:
  GradOpBuilder(const OpDesc& forward, std::string grad_type);
  GradOpBuilder& ForwardInputs(const std::vector<std::string>& slots);
  GradOpBuilder& ForwardOutputs(const std::vector<std::string>& slots);
  GradOpBuilder& OutputGrads(const std::vector<std::string>& slots);
  GradOpBuilder& InputGrads(const std::vector<std::string>& slots);
  OpDesc Build() const { return grad_; }
  operator std::vector<OpDesc>() const { return {grad_}; }

 private:
  const OpDesc& forward_;
  OpDesc grad_;
};

}  // namespace flotilla
