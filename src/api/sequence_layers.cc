#include "flotilla/api/sequence_layers.h"

#include <algorithm>
#include <cctype>

#include "api/layer_helper.h"
#include "api/nn_ops.h"
#include "flotilla/api/initializer.h"

namespace flotilla::layers {

using internal::LayerHelper;

namespace {

std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

// out = type(X=x, Y=y) with attrs; Y omitted when y is invalid.
Variable SequenceOp(const std::string& type, const Variable& x, const Variable& y, const std::string& out_slot,
                    AttributeMap attrs, DType dtype) {
  LayerHelper helper(type);
  Variable out = helper.CreateTmp(dtype);
  OpDesc op(type);
  op.In("X", {x.name()}).Out(out_slot, {out.name()});
  if (y.valid()) op.In("Y", {y.name()});
  op.attrs = std::move(attrs);
  helper.Append(std::move(op));
  return out;
}

}  // namespace

Variable sequence_pool(const Variable& input, const std::string& pool_type, bool is_test, float pad_value) {
  const std::string type = Upper(pool_type);
  LayerHelper helper("sequence_pool");
  Variable out = helper.CreateTmp(input.dtype());
  OpDesc op("sequence_pool");
  op.In("X", {input.name()}).Out("Out", {out.name()});
  if (type == "MAX") op.Out("MaxIndex", {helper.CreateTmp(DType::kInt32).name()});
  op.Set("pooltype", type).Set("is_test", is_test).Set("pad_value", pad_value);
  helper.Append(std::move(op));
  return out;
}

Variable sequence_first_step(const Variable& input) { return sequence_pool(input, "first"); }
Variable sequence_last_step(const Variable& input) { return sequence_pool(input, "last"); }

Variable sequence_softmax(const Variable& input) {
  return SequenceOp("sequence_softmax", input, {}, "Out", {}, input.dtype());
}

Variable sequence_expand(const Variable& x, const Variable& y, int ref_level) {
  return SequenceOp("sequence_expand", x, y, "Out", {{"ref_level", ref_level}}, x.dtype());
}

Variable sequence_expand_as(const Variable& x, const Variable& y) {
  return SequenceOp("sequence_expand_as", x, y, "Out", {}, x.dtype());
}

SequencePadOutputs sequence_pad(const Variable& x, const Variable& pad_value, int maxlen) {
  LayerHelper helper("sequence_pad");
  SequencePadOutputs outs{helper.CreateTmp(x.dtype()), helper.CreateTmp(DType::kInt64)};
  helper.Append(OpDesc("sequence_pad")
                    .In("X", {x.name()})
                    .In("PadValue", {pad_value.name()})
                    .Out("Out", {outs.out.name()})
                    .Out("Length", {outs.length.name()})
                    .Set("padded_length", maxlen));
  return outs;
}

Variable sequence_unpad(const Variable& x, const Variable& length) {
  LayerHelper helper("sequence_unpad");
  Variable out = helper.CreateTmp(x.dtype());
  helper.Append(OpDesc("sequence_unpad").In("X", {x.name()}).In("Length", {length.name()}).Out("Out", {out.name()}));
  return out;
}

Variable sequence_mask(const Variable& x, int maxlen, DType dtype) {
  return SequenceOp("sequence_mask", x, {}, "Y", {{"maxlen", maxlen}, {"out_dtype", static_cast<int32_t>(dtype)}},
                    dtype);
}

Variable sequence_reverse(const Variable& x) { return SequenceOp("sequence_reverse", x, {}, "Y", {}, x.dtype()); }

Variable sequence_enumerate(const Variable& input, int win_size, int pad_value) {
  return SequenceOp("sequence_enumerate", input, {}, "Out", {{"win_size", win_size}, {"pad_value", pad_value}},
                    input.dtype());
}

Variable sequence_conv(const Variable& input, int64_t num_filters, int filter_size, std::optional<int> padding_start,
                       const ParamAttr& param_attr, const ParamAttr& bias_attr, const std::string& act) {
  FLOTILLA_ENFORCE(input.shape().size() == 2 && input.shape()[1] > 0, "layers::sequence_conv: input '",
                   input.name(), "' must be [N, D] with D known, got ", DimsToString(input.shape()));
  FLOTILLA_ENFORCE(num_filters > 0 && filter_size > 0, "layers::sequence_conv: num_filters and filter_size "
                   "must be positive, got ", num_filters, " and ", filter_size);
  LayerHelper helper("sequence_conv");
  Variable filter = helper.CreateParameter(param_attr, {filter_size * input.shape()[1], num_filters},
                                           input.dtype(), false, std::make_shared<initializer::Xavier>());
  Variable out = helper.CreateTmp(input.dtype());
  helper.Append(OpDesc("sequence_conv")
                    .In("X", {input.name()})
                    .In("Filter", {filter.name()})
                    .Out("Out", {out.name()})
                    .Set("contextLength", filter_size)
                    .Set("contextStart", padding_start.value_or(-(filter_size / 2)))
                    .Set("contextStride", 1));
  if (bias_attr.enabled) {
    Variable b = helper.CreateParameter(bias_attr, {num_filters}, input.dtype(), true,
                                        std::make_shared<initializer::Constant>(0.0));
    out = internal::AddChannelBias(helper, out, b);
  }
  return helper.Activate(out, act);
}

Variable sequence_concat(const std::vector<Variable>& input) {
  FLOTILLA_ENFORCE(!input.empty(), "layers::sequence_concat needs at least one input");
  std::vector<std::string> names;
  for (const Variable& v : input) names.push_back(v.name());
  LayerHelper helper("sequence_concat");
  Variable out = helper.CreateTmp(input[0].dtype());
  helper.Append(OpDesc("sequence_concat").In("X", names).Out("Out", {out.name()}));
  return out;
}

Variable sequence_reshape(const Variable& input, int new_dim) {
  return SequenceOp("sequence_reshape", input, {}, "Out", {{"new_dim", new_dim}}, input.dtype());
}

Variable sequence_slice(const Variable& input, const Variable& offset, const Variable& length) {
  LayerHelper helper("sequence_slice");
  Variable out = helper.CreateTmp(input.dtype());
  helper.Append(OpDesc("sequence_slice")
                    .In("X", {input.name()})
                    .In("Offset", {offset.name()})
                    .In("Length", {length.name()})
                    .Out("Out", {out.name()}));
  return out;
}

Variable lod_reset(const Variable& x, const Variable& y, const std::vector<int32_t>& target_lod) {
  FLOTILLA_ENFORCE(y.valid() || !target_lod.empty(), "layers::lod_reset('", x.name(),
                   "'): give y or target_lod");
  LayerHelper helper("lod_reset");
  Variable out = helper.CreateTmp(x.dtype());
  OpDesc op("lod_reset");
  op.In("X", {x.name()}).Out("Out", {out.name()}).Set("target_lod", target_lod);
  if (y.valid()) op.In("Y", {y.name()});
  helper.Append(std::move(op));
  return out;
}

Variable lod_append(const Variable& x, const std::vector<int32_t>& level) {
  LayerHelper helper("lod_append");
  Variable out = helper.CreateTmp(x.dtype());
  helper.Append(OpDesc("lod_reset").In("X", {x.name()}).Out("Out", {out.name()}).Set("target_lod", level).Set("append", true));
  return out;
}

}  // namespace flotilla::layers
