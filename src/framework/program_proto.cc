// Program <-> proto::ProgramDesc.
#include "flotilla/framework/program.h"
#include "framework/framework.pb.h"

namespace flotilla {
namespace {

void AttrToProto(const std::string& name, const Attribute& attr, proto::Attr* out) {
  out->set_name(name);
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, bool>) out->set_b(v);
        else if constexpr (std::is_same_v<V, int32_t>) out->set_i(v);
        else if constexpr (std::is_same_v<V, int64_t>) out->set_l(v);
        else if constexpr (std::is_same_v<V, float>) out->set_f(v);
        else if constexpr (std::is_same_v<V, double>) out->set_d(v);
        else if constexpr (std::is_same_v<V, std::string>) out->set_s(v);
        else if constexpr (std::is_same_v<V, std::vector<int32_t>>) {
          for (auto x : v) out->mutable_ints()->add_values(x);
        } else if constexpr (std::is_same_v<V, std::vector<int64_t>>) {
          for (auto x : v) out->mutable_longs()->add_values(x);
        } else if constexpr (std::is_same_v<V, std::vector<float>>) {
          for (auto x : v) out->mutable_floats()->add_values(x);
        } else {
          for (const auto& x : v) out->mutable_strings()->add_values(x);
        }
      },
      attr);
}

Attribute AttrFromProto(const proto::Attr& a) {
  switch (a.value_case()) {
    case proto::Attr::kB: return a.b();
    case proto::Attr::kI: return a.i();
    case proto::Attr::kL: return a.l();
    case proto::Attr::kF: return a.f();
    case proto::Attr::kD: return a.d();
    case proto::Attr::kS: return a.s();
    case proto::Attr::kInts: return std::vector<int32_t>(a.ints().values().begin(), a.ints().values().end());
    case proto::Attr::kLongs: return std::vector<int64_t>(a.longs().values().begin(), a.longs().values().end());
    case proto::Attr::kFloats: return std::vector<float>(a.floats().values().begin(), a.floats().values().end());
    case proto::Attr::kStrings: return std::vector<std::string>(a.strings().values().begin(), a.strings().values().end());
    case proto::Attr::VALUE_NOT_SET: break;
  }
  FLOTILLA_THROW(Corruption, "attribute '", a.name(), "' has no value");
}

void SlotsToProto(const VarNameMap& slots, google::protobuf::RepeatedPtrField<proto::OpVar>* out) {
  for (const auto& [slot, names] : slots) {
    proto::OpVar* v = out->Add();
    v->set_parameter(slot);
    for (const auto& n : names) v->add_arguments(n);
  }
}

VarNameMap SlotsFromProto(const google::protobuf::RepeatedPtrField<proto::OpVar>& in) {
  VarNameMap out;
  for (const auto& v : in) out[v.parameter()].assign(v.arguments().begin(), v.arguments().end());
  return out;
}

void VarToProto(const VarDesc& v, proto::VarDesc* out) {
  out->set_name(v.name);
  out->set_type(static_cast<int32_t>(v.type));
  out->set_dtype(static_cast<int32_t>(v.dtype));
  for (auto d : v.shape) out->add_shape(d);
  out->set_persistable(v.persistable);
  out->set_stop_gradient(v.stop_gradient);
  out->set_is_parameter(v.is_parameter);
  out->set_is_data(v.is_data);
  out->set_lod_level(v.lod_level);
}

void VarFromProto(const proto::VarDesc& in, VarDesc* v) {
  v->type = static_cast<VarType>(in.type());
  v->dtype = static_cast<DType>(in.dtype());
  v->shape.assign(in.shape().begin(), in.shape().end());
  v->persistable = in.persistable();
  v->stop_gradient = in.stop_gradient();
  v->is_parameter = in.is_parameter();
  v->is_data = in.is_data();
  v->lod_level = in.lod_level();
}

}  // namespace

void Program::ToProto(proto::ProgramDesc* out) const {
  out->Clear();
  out->set_random_seed(random_seed_);
  out->set_version(1);
  for (int b = 0; b < num_blocks(); ++b) {
    const Block& block = this->block(b);
    proto::BlockDesc* pb = out->add_blocks();
    pb->set_idx(block.idx());
    pb->set_parent_idx(block.parent_idx());
    for (const VarDesc* v : block.AllVars()) VarToProto(*v, pb->add_vars());
    for (const auto& op : block.ops()) {
      proto::OpDesc* po = pb->add_ops();
      po->set_type(op->type);
      SlotsToProto(op->inputs, po->mutable_inputs());
      SlotsToProto(op->outputs, po->mutable_outputs());
      for (const auto& [name, attr] : op->attrs) AttrToProto(name, attr, po->add_attrs());
    }
  }
}

Program Program::FromProto(const proto::ProgramDesc& in) {
  Program program;
  program.random_seed_ = in.random_seed();
  for (int b = 1; b < in.blocks_size(); ++b) program.CreateBlock(in.blocks(b).parent_idx());
  for (int b = 0; b < in.blocks_size(); ++b) {
    Block& block = program.block(b);
    for (const auto& pv : in.blocks(b).vars()) VarFromProto(pv, &block.CreateVar(pv.name()));
    for (const auto& po : in.blocks(b).ops()) {
      OpDesc op(po.type());
      op.inputs = SlotsFromProto(po.inputs());
      op.outputs = SlotsFromProto(po.outputs());
      for (const auto& a : po.attrs()) op.attrs[a.name()] = AttrFromProto(a);
      block.AppendOpRaw(std::move(op));
    }
  }
  return program;
}

std::string Program::Serialize() const {
  proto::ProgramDesc desc;
  ToProto(&desc);
  return desc.SerializeAsString();
}

Program Program::Parse(const std::string& bytes, const std::string& what) {
  proto::ProgramDesc desc;
  if (!desc.ParseFromString(bytes) || desc.blocks_size() == 0) {
    FLOTILLA_THROW(Corruption, what, " is not a valid serialised program (", bytes.size(),
                   " bytes)");
  }
  return FromProto(desc);
}

}  // namespace flotilla
