#include "flotilla/framework/desc.h"

#include <algorithm>
#include <optional>
#include <sstream>

namespace flotilla {

std::string AttributeTypeName(const Attribute& attr) {
  static const char* kNames[] = {"bool",         "int32",        "int64",      "float32",
                                 "float64",      "string",       "int32 list", "int64 list",
                                 "float32 list", "string list"};
  return kNames[attr.index()];
}

namespace internal {
namespace {

template <typename T>
constexpr bool kIsScalar = std::is_arithmetic_v<T>;

template <typename To, typename From>
std::vector<To> ConvertList(const std::vector<From>& from) {
  return std::vector<To>(from.begin(), from.end());
}

}  // namespace

template <typename T>
T AttrCast(const Attribute& attr, const std::string& op, const std::string& name) {
  if (const T* exact = std::get_if<T>(&attr)) return *exact;
  std::optional<T> out;
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (kIsScalar<T> && kIsScalar<V>) {
          out = static_cast<T>(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>> &&
                             std::is_same_v<V, std::vector<int32_t>>) {
          out = ConvertList<int64_t>(v);
        } else if constexpr (std::is_same_v<T, std::vector<int32_t>> &&
                             std::is_same_v<V, std::vector<int64_t>>) {
          out = ConvertList<int32_t>(v);
        } else if constexpr (std::is_same_v<T, std::vector<float>> &&
                             (std::is_same_v<V, std::vector<int32_t>> ||
                              std::is_same_v<V, std::vector<int64_t>>)) {
          out = ConvertList<float>(v);
        }
      },
      attr);
  if (!out) {
    FLOTILLA_THROW(InvalidArgument, "op '", op, "' attribute '", name, "' holds ",
                   AttributeTypeName(attr), ", which cannot be read as the requested type ",
                   AttributeTypeName(Attribute(T{})));
  }
  return *out;
}

template bool AttrCast<bool>(const Attribute&, const std::string&, const std::string&);
template int32_t AttrCast<int32_t>(const Attribute&, const std::string&, const std::string&);
template int64_t AttrCast<int64_t>(const Attribute&, const std::string&, const std::string&);
template float AttrCast<float>(const Attribute&, const std::string&, const std::string&);
template double AttrCast<double>(const Attribute&, const std::string&, const std::string&);
template std::string AttrCast<std::string>(const Attribute&, const std::string&, const std::string&);
template std::vector<int32_t> AttrCast<std::vector<int32_t>>(const Attribute&, const std::string&,
                                                             const std::string&);
template std::vector<int64_t> AttrCast<std::vector<int64_t>>(const Attribute&, const std::string&,
                                                             const std::string&);
template std::vector<float> AttrCast<std::vector<float>>(const Attribute&, const std::string&,
                                                         const std::string&);
template std::vector<std::string> AttrCast<std::vector<std::string>>(const Attribute&,
                                                                     const std::string&,
                                                                     const std::string&);
}  // namespace internal

OpDesc& OpDesc::In(const std::string& slot, std::vector<std::string> names) {
  inputs[slot] = std::move(names);
  return *this;
}

OpDesc& OpDesc::Out(const std::string& slot, std::vector<std::string> names) {
  outputs[slot] = std::move(names);
  return *this;
}

OpDesc& OpDesc::Set(const std::string& name, Attribute value) {
  attrs[name] = std::move(value);
  return *this;
}

namespace {

const std::vector<std::string>& SlotOrEmpty(const VarNameMap& map, const std::string& slot) {
  static const std::vector<std::string> kEmpty;
  auto it = map.find(slot);
  return it == map.end() ? kEmpty : it->second;
}

const std::string& Single(const VarNameMap& map, const std::string& type, const char* kind,
                          const std::string& slot) {
  const auto& names = SlotOrEmpty(map, slot);
  FLOTILLA_ENFORCE(names.size() == 1, "op '", type, "' expects exactly one ", kind, " in slot '",
                   slot, "', found ", names.size());
  return names[0];
}

bool SlotPresent(const VarNameMap& map, const std::string& slot) {
  const auto& names = SlotOrEmpty(map, slot);
  return std::any_of(names.begin(), names.end(),
                     [](const std::string& n) { return !n.empty() && n != kEmptyVarName; });
}

std::vector<std::string> AllNames(const VarNameMap& map) {
  std::vector<std::string> out;
  for (const auto& [slot, names] : map) {
    for (const auto& n : names) {
      if (n != kEmptyVarName) out.push_back(n);
    }
  }
  return out;
}

void Rename(VarNameMap& map, const std::string& from, const std::string& to) {
  for (auto& [slot, names] : map) std::replace(names.begin(), names.end(), from, to);
}

void PrintSlots(std::ostringstream& out, const VarNameMap& map) {
  bool first = true;
  for (const auto& [slot, names] : map) {
    out << (first ? "" : ", ") << slot << "=[";
    for (size_t i = 0; i < names.size(); ++i) out << (i ? ", " : "") << names[i];
    out << "]";
    first = false;
  }
}

}  // namespace

const std::string& OpDesc::Input(const std::string& slot) const {
  return Single(inputs, type, "input", slot);
}
const std::string& OpDesc::Output(const std::string& slot) const {
  return Single(outputs, type, "output", slot);
}
const std::vector<std::string>& OpDesc::Inputs(const std::string& slot) const {
  return SlotOrEmpty(inputs, slot);
}
const std::vector<std::string>& OpDesc::Outputs(const std::string& slot) const {
  return SlotOrEmpty(outputs, slot);
}
bool OpDesc::HasInput(const std::string& slot) const { return SlotPresent(inputs, slot); }
bool OpDesc::HasOutput(const std::string& slot) const { return SlotPresent(outputs, slot); }
std::vector<std::string> OpDesc::InputArgumentNames() const { return AllNames(inputs); }
std::vector<std::string> OpDesc::OutputArgumentNames() const { return AllNames(outputs); }
void OpDesc::RenameInput(const std::string& from, const std::string& to) { Rename(inputs, from, to); }
void OpDesc::RenameOutput(const std::string& from, const std::string& to) {
  Rename(outputs, from, to);
}

std::string OpDesc::DebugString() const {
  std::ostringstream out;
  out << type << "(";
  PrintSlots(out, inputs);
  out << ") -> (";
  PrintSlots(out, outputs);
  out << ")";
  return out.str();
}

}  // namespace flotilla
