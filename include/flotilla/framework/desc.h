// The static program's building blocks: descriptions of variables and ops.
// They are plain data; Program/Block own them and keep them consistent.
// Serialised as the protobuf messages in src/framework/framework.proto.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "flotilla/common/enforce.h"
#include "flotilla/core/dims.h"
#include "flotilla/core/dtype.h"

namespace flotilla {

// The name given to an op argument that is deliberately absent (a gradient
// nobody needs). Kernels see such an argument as missing.
inline constexpr const char* kEmptyVarName = "@EMPTY@";
inline constexpr const char* kGradSuffix = "@GRAD";
inline std::string GradVarName(const std::string& name) { return name + kGradSuffix; }

enum class VarType : int {
  kDenseTensor = 7,   // Paddle's LOD_TENSOR code
  kSelectedRows = 8,
  kRaw = 17,          // opaque runtime objects (communicator handles, readers)
};

struct VarDesc {
  std::string name;
  VarType type = VarType::kDenseTensor;
  DType dtype = DType::kFloat32;
  Dims shape;
  bool persistable = false;
  bool stop_gradient = false;
  bool is_parameter = false;
  bool is_data = false;  // fed by the user; the executor checks its feed
  // Levels of sequence offsets its tensors carry (Paddle's lod_level): 0 for
  // dense data, 1 for a batch of variable-length sequences.
  int lod_level = 0;
  // A parameter's own weight decay (ParamAttr::regularizer), which overrides
  // the optimizer's: "" (none of its own), "l2_decay" or "l1_decay", with its
  // coefficient. Copied by Program::Clone; not serialised.
  std::string regularizer;
  float regularization_coeff = 0.0f;
  // A parameter's learning-rate multiplier (ParamAttr::learning_rate): its
  // update reads the optimizer's rate times this. Copied by Program::Clone;
  // not serialised.
  float learning_rate = 1.0f;
};

using Attribute = std::variant<bool, int32_t, int64_t, float, double, std::string,
                               std::vector<int32_t>, std::vector<int64_t>, std::vector<float>,
                               std::vector<std::string>>;
using AttributeMap = std::map<std::string, Attribute>;
using VarNameMap = std::map<std::string, std::vector<std::string>>;

// "int32", "float32 list", ... for messages.
std::string AttributeTypeName(const Attribute& attr);

// The roles Paddle tags ops with (attr "op_role"); passes use them to find
// the backward and optimizer sections of a program.
enum OpRole : int32_t {
  kOpRoleForward = 0x0000,
  kOpRoleBackward = 0x0001,
  kOpRoleOptimize = 0x0002,
  kOpRoleRPC = 0x0004,
  kOpRoleDist = 0x0008,
  kOpRoleLRSched = 0x0010,
  kOpRoleLoss = 0x0100,
};
inline constexpr const char* kOpRoleAttr = "op_role";
// [param, grad] pairs for optimizer and backward ops.
inline constexpr const char* kOpRoleVarAttr = "op_role_var";

namespace internal {
// Converts between numeric attribute types; throws InvalidArgument naming
// the op and attribute when the stored type cannot become T.
template <typename T>
T AttrCast(const Attribute& attr, const std::string& op, const std::string& name);
}  // namespace internal

struct OpDesc {
  std::string type;
  VarNameMap inputs;
  VarNameMap outputs;
  AttributeMap attrs;

  OpDesc() = default;
  explicit OpDesc(std::string t) : type(std::move(t)) {}

  // Builder-style setters: OpDesc("mul").In("X", {x}).Out("Out", {o}).Set("axis", 1).
  OpDesc& In(const std::string& slot, std::vector<std::string> names);
  OpDesc& Out(const std::string& slot, std::vector<std::string> names);
  OpDesc& Set(const std::string& name, Attribute value);

  // The single argument of a slot; throws InvalidArgument naming the op and
  // slot when the slot is absent or has several arguments.
  const std::string& Input(const std::string& slot) const;
  const std::string& Output(const std::string& slot) const;
  // All arguments of a slot; empty when absent.
  const std::vector<std::string>& Inputs(const std::string& slot) const;
  const std::vector<std::string>& Outputs(const std::string& slot) const;
  bool HasInput(const std::string& slot) const;   // present, non-empty, not @EMPTY@
  bool HasOutput(const std::string& slot) const;
  std::vector<std::string> InputArgumentNames() const;
  std::vector<std::string> OutputArgumentNames() const;
  void RenameInput(const std::string& from, const std::string& to);
  void RenameOutput(const std::string& from, const std::string& to);

  bool HasAttr(const std::string& name) const { return attrs.count(name) > 0; }
  // Typed attribute; throws InvalidArgument naming op and attribute when it is
  // missing or of an incompatible type.
  template <typename T> T Attr(const std::string& name) const;
  template <typename T> T AttrOr(const std::string& name, T fallback) const;
  int32_t Role() const { return AttrOr<int32_t>(kOpRoleAttr, kOpRoleForward); }

  // "mul(X=[x], Y=[w]) -> (Out=[o])" for messages.
  std::string DebugString() const;
};

template <typename T>
T OpDesc::Attr(const std::string& name) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) FLOTILLA_THROW(InvalidArgument, "op '", type, "' has no attribute '", name, "'");
  return internal::AttrCast<T>(it->second, type, name);
}

template <typename T>
T OpDesc::AttrOr(const std::string& name, T fallback) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  return internal::AttrCast<T>(it->second, type, name);
}

}  // namespace flotilla
