// DistributedStrategy's fields by path, through protobuf reflection over the
// message's descriptor: the accessors every binding and tool uses.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "fleet/strategy_proto.h"
#include "flotilla/common/enforce.h"
#include "flotilla/fleet/distributed_strategy.h"

namespace flotilla::fleet {

namespace {

namespace pb = google::protobuf;
using FD = pb::FieldDescriptor;

// The fields `path` walks through, outermost first.
std::vector<const FD*> Walk(std::string_view path) {
  std::vector<const FD*> chain;
  const pb::Descriptor* d = proto::DistributedStrategy::descriptor();
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string name(path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    const FD* f = d->FindFieldByName(name);
    FLOTILLA_CHECK(f != nullptr, InvalidArgument, "DistributedStrategy has no field '", path, "'");
    chain.push_back(f);
    if (dot == std::string_view::npos) return chain;
    FLOTILLA_CHECK(f->cpp_type() == FD::CPPTYPE_MESSAGE, InvalidArgument, "DistributedStrategy field '", name,
                   "' is not a config group");
    d = f->message_type();
    start = dot + 1;
  }
}

StrategyFieldType TypeOf(const FD* f) {
  const bool list = f->is_repeated();
  switch (f->cpp_type()) {
    case FD::CPPTYPE_BOOL: return StrategyFieldType::kBool;
    case FD::CPPTYPE_INT32:
    case FD::CPPTYPE_INT64: return StrategyFieldType::kInt;
    case FD::CPPTYPE_FLOAT:
    case FD::CPPTYPE_DOUBLE: return list ? StrategyFieldType::kFloatList : StrategyFieldType::kFloat;
    case FD::CPPTYPE_STRING: return list ? StrategyFieldType::kStringList : StrategyFieldType::kString;
    case FD::CPPTYPE_MESSAGE: return StrategyFieldType::kGroup;
    default: FLOTILLA_THROW(Internal, "DistributedStrategy field '", f->full_name(), "' has an unexpected type");
  }
}

const char* TypeName(StrategyFieldType t) {
  switch (t) {
    case StrategyFieldType::kBool: return "a bool";
    case StrategyFieldType::kInt: return "an integer";
    case StrategyFieldType::kFloat: return "a number";
    case StrategyFieldType::kString: return "a string";
    case StrategyFieldType::kStringList: return "a list of strings";
    case StrategyFieldType::kFloatList: return "a list of numbers";
    case StrategyFieldType::kGroup: return "a config group";
  }
  return "?";
}

// The message holding the last field of `chain`, created on the way when
// `root` is mutable.
pb::Message* MutableHolder(pb::Message* root, const std::vector<const FD*>& chain) {
  for (size_t i = 0; i + 1 < chain.size(); ++i) root = root->GetReflection()->MutableMessage(root, chain[i]);
  return root;
}

StrategyValue GetScalar(const pb::Message& msg, const FD* f) {
  const pb::Reflection* r = msg.GetReflection();
  switch (f->cpp_type()) {
    case FD::CPPTYPE_BOOL: return r->GetBool(msg, f);
    case FD::CPPTYPE_INT32: return int64_t{r->GetInt32(msg, f)};
    case FD::CPPTYPE_INT64: return r->GetInt64(msg, f);
    case FD::CPPTYPE_FLOAT: return double{r->GetFloat(msg, f)};
    case FD::CPPTYPE_DOUBLE: return r->GetDouble(msg, f);
    default: return r->GetString(msg, f);
  }
}

StrategyValue GetList(const pb::Message& msg, const FD* f) {
  const pb::Reflection* r = msg.GetReflection();
  const int n = r->FieldSize(msg, f);
  if (f->cpp_type() == FD::CPPTYPE_STRING) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) out.push_back(r->GetRepeatedString(msg, f, i));
    return out;
  }
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(f->cpp_type() == FD::CPPTYPE_FLOAT ? r->GetRepeatedFloat(msg, f, i) : r->GetRepeatedDouble(msg, f, i));
  }
  return out;
}

[[noreturn]] void WrongType(std::string_view path, StrategyFieldType want, const StrategyValue& value) {
  static constexpr StrategyFieldType kHeld[] = {StrategyFieldType::kBool,   StrategyFieldType::kInt,
                                                StrategyFieldType::kFloat,  StrategyFieldType::kString,
                                                StrategyFieldType::kStringList, StrategyFieldType::kFloatList};
  FLOTILLA_THROW(InvalidArgument, "DistributedStrategy.", path, " holds ", TypeName(want), ", not ",
                 TypeName(kHeld[value.index()]));
}

// An integer field's value, checked against the field's range.
int64_t IntFor(std::string_view path, const FD* f, int64_t v) {
  if (f->cpp_type() == FD::CPPTYPE_INT32) {
    FLOTILLA_CHECK(v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(),
                   InvalidArgument, "DistributedStrategy.", path, "=", v, " is outside the 32-bit range");
  }
  return v;
}

void SetScalar(pb::Message* msg, const FD* f, std::string_view path, const StrategyValue& value) {
  const pb::Reflection* r = msg->GetReflection();
  const StrategyFieldType type = TypeOf(f);
  const auto* i = std::get_if<int64_t>(&value);
  if (type == StrategyFieldType::kBool && std::holds_alternative<bool>(value)) {
    r->SetBool(msg, f, std::get<bool>(value));
  } else if (type == StrategyFieldType::kInt && i != nullptr) {
    if (f->cpp_type() == FD::CPPTYPE_INT32) {
      r->SetInt32(msg, f, static_cast<int32_t>(IntFor(path, f, *i)));
    } else {
      r->SetInt64(msg, f, *i);
    }
  } else if (type == StrategyFieldType::kFloat && (i != nullptr || std::holds_alternative<double>(value))) {
    const double v = i != nullptr ? static_cast<double>(*i) : std::get<double>(value);
    if (f->cpp_type() == FD::CPPTYPE_FLOAT) {
      r->SetFloat(msg, f, static_cast<float>(v));
    } else {
      r->SetDouble(msg, f, v);
    }
  } else if (type == StrategyFieldType::kString && std::holds_alternative<std::string>(value)) {
    r->SetString(msg, f, std::get<std::string>(value));
  } else {
    WrongType(path, type, value);
  }
}

void SetList(pb::Message* msg, const FD* f, std::string_view path, const StrategyValue& value) {
  const pb::Reflection* r = msg->GetReflection();
  const StrategyFieldType type = TypeOf(f);
  if (type == StrategyFieldType::kStringList && std::holds_alternative<std::vector<std::string>>(value)) {
    r->ClearField(msg, f);
    for (const std::string& s : std::get<std::vector<std::string>>(value)) r->AddString(msg, f, s);
  } else if (type == StrategyFieldType::kFloatList && std::holds_alternative<std::vector<double>>(value)) {
    r->ClearField(msg, f);
    for (double v : std::get<std::vector<double>>(value)) {
      if (f->cpp_type() == FD::CPPTYPE_FLOAT) {
        r->AddFloat(msg, f, static_cast<float>(v));
      } else {
        r->AddDouble(msg, f, v);
      }
    }
  } else {
    WrongType(path, type, value);
  }
}

template <typename T>
T GetAs(const DistributedStrategy& s, std::string_view path, StrategyFieldType asked) {
  StrategyValue v = s.Get(path);
  if (auto* t = std::get_if<T>(&v)) return std::move(*t);
  FLOTILLA_THROW(InvalidArgument, "DistributedStrategy.", path, " holds ", TypeName(DistributedStrategy::Type(path)),
                 ", not ", TypeName(asked));
}

}  // namespace

std::pair<const pb::Message*, const FD*> FieldAt(const proto::DistributedStrategy& root, std::string_view path) {
  const std::vector<const FD*> chain = Walk(path);
  const pb::Message* msg = &root;
  for (size_t i = 0; i + 1 < chain.size(); ++i) msg = &msg->GetReflection()->GetMessage(*msg, chain[i]);
  return {msg, chain.back()};
}

std::vector<StrategyField> DistributedStrategy::Fields(std::string_view group) {
  const pb::Descriptor* d = proto::DistributedStrategy::descriptor();
  if (!group.empty()) {
    const FD* g = Walk(group).back();
    FLOTILLA_CHECK(g->cpp_type() == FD::CPPTYPE_MESSAGE, InvalidArgument, "DistributedStrategy field '", group,
                   "' is not a config group");
    d = g->message_type();
  }
  std::vector<StrategyField> out;
  for (int i = 0; i < d->field_count(); ++i) out.push_back({d->field(i)->name(), TypeOf(d->field(i))});
  return out;
}

StrategyFieldType DistributedStrategy::Type(std::string_view path) { return TypeOf(Walk(path).back()); }

bool DistributedStrategy::Has(std::string_view path) const {
  auto [msg, f] = FieldAt(*proto_, path);
  if (f->is_repeated()) return msg->GetReflection()->FieldSize(*msg, f) > 0;
  return msg->GetReflection()->HasField(*msg, f);
}

StrategyValue DistributedStrategy::Get(std::string_view path) const {
  auto [msg, f] = FieldAt(*proto_, path);
  FLOTILLA_CHECK(f->cpp_type() != FD::CPPTYPE_MESSAGE, InvalidArgument, "DistributedStrategy.", path,
                 " is a config group: read its fields");
  return f->is_repeated() ? GetList(*msg, f) : GetScalar(*msg, f);
}

bool DistributedStrategy::GetBool(std::string_view path) const { return GetAs<bool>(*this, path, StrategyFieldType::kBool); }
int64_t DistributedStrategy::GetInt(std::string_view path) const { return GetAs<int64_t>(*this, path, StrategyFieldType::kInt); }
double DistributedStrategy::GetFloat(std::string_view path) const { return GetAs<double>(*this, path, StrategyFieldType::kFloat); }
std::string DistributedStrategy::GetString(std::string_view path) const { return GetAs<std::string>(*this, path, StrategyFieldType::kString); }
std::vector<std::string> DistributedStrategy::GetStrings(std::string_view path) const {
  return GetAs<std::vector<std::string>>(*this, path, StrategyFieldType::kStringList);
}

void DistributedStrategy::Set(std::string_view path, const StrategyValue& value) {
  const std::vector<const FD*> chain = Walk(path);
  const FD* f = chain.back();
  FLOTILLA_CHECK(f->cpp_type() != FD::CPPTYPE_MESSAGE, InvalidArgument, "DistributedStrategy.", path,
                 " is a config group: set its fields");
  pb::Message* msg = MutableHolder(proto_.get(), chain);
  if (f->is_repeated()) {
    SetList(msg, f, path, value);
  } else {
    SetScalar(msg, f, path, value);
  }
}

void DistributedStrategy::Clear(std::string_view path) {
  const std::vector<const FD*> chain = Walk(path);
  pb::Message* msg = MutableHolder(proto_.get(), chain);
  msg->GetReflection()->ClearField(msg, chain.back());
}

}  // namespace flotilla::fleet
