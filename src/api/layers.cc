#include "flotilla/api/layers.h"

#include <algorithm>
#include <set>

#include "api/layer_helper.h"

namespace flotilla::layers {

using internal::LayerHelper;
using internal::UnaryOp;

Variable data(const std::string& name, Dims shape, DType dtype, bool append_batch_size, int lod_level) {
  FLOTILLA_ENFORCE(lod_level >= 0, "layers::data(", name, "): lod_level must be >= 0, got ", lod_level);
  bool has_unknown = std::find(shape.begin(), shape.end(), -1) != shape.end();
  if (append_batch_size && !has_unknown) shape.insert(shape.begin(), -1);
  Block& block = default_main_program().global_block();
  if (const VarDesc* old = block.FindVar(name)) {
    // As Paddle: declaring the same data again gives the variable back; a
    // different declaration under its name is refused.
    FLOTILLA_ENFORCE(old->is_data && old->shape == shape && old->dtype == dtype && old->lod_level == lod_level,
                     "layers::data: variable '", name, "' has been created before as ",
                     old->is_data ? "data" : "a non-data variable", " of shape ", DimsToString(old->shape),
                     ", dtype ", DTypeName(old->dtype), ", lod_level ", old->lod_level,
                     "; the new declaration (shape ", DimsToString(shape), ", dtype ", DTypeName(dtype),
                     ", lod_level ", lod_level, ") does not match");
    return Variable(&block, name);
  }
  VarDesc& v = block.CreateVar(name);
  v.shape = std::move(shape);
  v.dtype = dtype;
  v.is_data = true;
  v.lod_level = lod_level;
  v.stop_gradient = true;
  return Variable(&block, name);
}

Variable fc(const Variable& input, int64_t size, int num_flatten_dims, const ParamAttr& param_attr,
            const ParamAttr& bias_attr, const std::string& act, const std::string& name) {
  return fc(std::vector<Variable>{input}, size, num_flatten_dims, param_attr, bias_attr, act, name);
}

Variable fc(const std::vector<Variable>& inputs, int64_t size, int num_flatten_dims,
            const ParamAttr& param_attr, const ParamAttr& bias_attr, const std::string& act,
            const std::string& name) {
  FLOTILLA_ENFORCE(!inputs.empty(), "layers::fc needs at least one input");
  FLOTILLA_ENFORCE(size > 0, "layers::fc: size must be positive, got ", size);
  LayerHelper helper(name.empty() ? "fc" : name);
  std::vector<std::string> products;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Variable& x = inputs[i];
    int64_t in_features = Product(x.shape(), num_flatten_dims, x.shape().size());
    FLOTILLA_ENFORCE(in_features > 0, "layers::fc: input '", x.name(), "' of shape ",
                     DimsToString(x.shape()), " has unknown features after flattening at ",
                     num_flatten_dims);
    ParamAttr attr = param_attr;
    if (inputs.size() > 1 && !attr.name.empty()) attr.name += "_" + std::to_string(i);
    Variable w = helper.CreateParameter(attr, {in_features, size}, x.dtype(), false,
                                        std::make_shared<initializer::Xavier>());
    Variable out = helper.CreateTmp(x.dtype());
    helper.Append(OpDesc("mul")
                      .In("X", {x.name()})
                      .In("Y", {w.name()})
                      .Out("Out", {out.name()})
                      .Set("x_num_col_dims", num_flatten_dims)
                      .Set("y_num_col_dims", 1));
    products.push_back(out.name());
  }
  Variable pre = Variable(&helper.main_block(), products[0]);
  if (products.size() > 1) {
    pre = helper.CreateTmp(inputs[0].dtype());
    helper.Append(OpDesc("sum").In("X", products).Out("Out", {pre.name()}));
  }
  if (bias_attr.enabled) {
    Variable b = helper.CreateParameter(bias_attr, {size}, inputs[0].dtype(), true,
                                        std::make_shared<initializer::Constant>(0.0));
    Variable biased = helper.CreateTmp(inputs[0].dtype());
    helper.Append(OpDesc("elementwise_add")
                      .In("X", {pre.name()})
                      .In("Y", {b.name()})
                      .Out("Out", {biased.name()})
                      .Set("axis", num_flatten_dims));
    pre = biased;
  }
  return helper.Activate(pre, act);
}

Variable embedding(const Variable& input, std::vector<int64_t> size, bool is_sparse,
                   bool is_distributed, int64_t padding_idx, const ParamAttr& param_attr,
                   DType dtype) {
  FLOTILLA_ENFORCE(size.size() == 2 && size[0] > 0 && size[1] > 0,
                   "layers::embedding: size must be [vocabulary, dim], got ",
                   DimsToString(Dims(size.begin(), size.end())));
  FLOTILLA_ENFORCE(input.dtype() == DType::kInt64, "layers::embedding: ids '", input.name(),
                   "' must be int64, got ", DTypeName(input.dtype()));
  LayerHelper helper("embedding");
  Variable w = helper.CreateParameter(param_attr, Dims(size.begin(), size.end()), dtype, false,
                                      std::make_shared<initializer::Xavier>());
  if (padding_idx < -1) padding_idx += size[0];
  Variable out = helper.CreateTmp(dtype);
  helper.Append(OpDesc("lookup_table")
                    .In("W", {w.name()})
                    .In("Ids", {input.name()})
                    .Out("Out", {out.name()})
                    .Set("is_sparse", is_sparse)
                    .Set("is_distributed", is_distributed)
                    .Set("padding_idx", padding_idx));
  return out;
}

Variable relu(const Variable& x) { return UnaryOp("relu", x); }
Variable tanh(const Variable& x) { return UnaryOp("tanh", x); }
Variable sigmoid(const Variable& x) { return UnaryOp("sigmoid", x); }
Variable square(const Variable& x) { return UnaryOp("square", x); }
Variable softsign(const Variable& x) { return UnaryOp("softsign", x); }
Variable softmax(const Variable& x, int axis) { return UnaryOp("softmax", x, {{"axis", axis}}); }
Variable mean(const Variable& x) { return UnaryOp("mean", x); }

Variable scale(const Variable& x, float scale, float bias, bool bias_after_scale) {
  return UnaryOp("scale", x,
                 {{"scale", scale}, {"bias", bias}, {"bias_after_scale", bias_after_scale}});
}

Variable reduce_sum(const Variable& x, std::vector<int32_t> dim, bool keep_dim) {
  bool all = dim.empty();
  return UnaryOp("reduce_sum", x,
                 {{"dim", all ? std::vector<int32_t>{0} : dim}, {"keep_dim", keep_dim}, {"reduce_all", all}});
}

Variable reduce_mean(const Variable& x, std::vector<int32_t> dim, bool keep_dim) {
  bool all = dim.empty();
  return UnaryOp("reduce_mean", x,
                 {{"dim", all ? std::vector<int32_t>{0} : dim}, {"keep_dim", keep_dim}, {"reduce_all", all}});
}

Variable reshape(const Variable& x, std::vector<int64_t> shape) {
  return UnaryOp("reshape", x, {{"shape", shape}});
}

Variable cast(const Variable& x, DType dtype) {
  return UnaryOp("cast", x,
                 {{"in_dtype", static_cast<int32_t>(x.dtype())}, {"out_dtype", static_cast<int32_t>(dtype)}});
}

namespace {

Variable Binary(const std::string& type, const Variable& x, const Variable& y, int axis,
                const std::string& act) {
  LayerHelper helper(type);
  Variable out = helper.CreateTmp(x.dtype());
  helper.Append(OpDesc(type).In("X", {x.name()}).In("Y", {y.name()}).Out("Out", {out.name()}).Set("axis", axis));
  return helper.Activate(out, act);
}

}  // namespace

Variable elementwise_add(const Variable& x, const Variable& y, int axis, const std::string& act) {
  return Binary("elementwise_add", x, y, axis, act);
}
Variable elementwise_sub(const Variable& x, const Variable& y, int axis, const std::string& act) {
  return Binary("elementwise_sub", x, y, axis, act);
}
Variable elementwise_mul(const Variable& x, const Variable& y, int axis, const std::string& act) {
  return Binary("elementwise_mul", x, y, axis, act);
}
Variable elementwise_div(const Variable& x, const Variable& y, int axis, const std::string& act) {
  return Binary("elementwise_div", x, y, axis, act);
}

Variable elementwise_max(const Variable& x, const Variable& y, int axis, const std::string& act) {
  return Binary("elementwise_max", x, y, axis, act);
}
Variable elementwise_min(const Variable& x, const Variable& y, int axis, const std::string& act) {
  return Binary("elementwise_min", x, y, axis, act);
}

Variable compare(const std::string& type, const Variable& x, const Variable& y, int axis) {
  static const std::set<std::string> kTypes = {"less_than",     "less_equal", "greater_than",
                                               "greater_equal", "equal",      "not_equal"};
  FLOTILLA_ENFORCE(kTypes.count(type) == 1, "layers::compare: '", type,
                   "' is not one of less_than, less_equal, greater_than, greater_equal, equal, not_equal");
  LayerHelper helper(type);
  Variable out = helper.CreateTmp(DType::kInt64);
  helper.Append(OpDesc(type).In("X", {x.name()}).In("Y", {y.name()}).Out("Out", {out.name()}).Set("axis", axis));
  out.set_stop_gradient(true);
  return out;
}

Variable cos_sim(const Variable& x, const Variable& y, float eps) {
  LayerHelper helper("cos_sim");
  Variable out = helper.CreateTmp(x.dtype());
  Variable x_norm = helper.CreateTmp(x.dtype());
  Variable y_norm = helper.CreateTmp(x.dtype());
  helper.Append(OpDesc("cos_sim")
                    .In("X", {x.name()})
                    .In("Y", {y.name()})
                    .Out("Out", {out.name()})
                    .Out("XNorm", {x_norm.name()})
                    .Out("YNorm", {y_norm.name()})
                    .Set("eps", eps));
  return out;
}

Variable matmul(const Variable& x, const Variable& y, bool transpose_x, bool transpose_y, float alpha) {
  LayerHelper helper("matmul");
  Variable out = helper.CreateTmp(x.dtype());
  helper.Append(OpDesc("matmul")
                    .In("X", {x.name()})
                    .In("Y", {y.name()})
                    .Out("Out", {out.name()})
                    .Set("transpose_X", transpose_x)
                    .Set("transpose_Y", transpose_y)
                    .Set("alpha", alpha));
  return out;
}

namespace {
std::vector<std::string> Names(const std::vector<Variable>& xs) {
  std::vector<std::string> names;
  for (const auto& x : xs) names.push_back(x.name());
  return names;
}
}  // namespace

Variable sums(const std::vector<Variable>& xs) {
  FLOTILLA_ENFORCE(!xs.empty(), "layers::sums needs at least one input");
  LayerHelper helper("sum");
  Variable out = helper.CreateTmp(xs[0].dtype());
  helper.Append(OpDesc("sum").In("X", Names(xs)).Out("Out", {out.name()}));
  return out;
}

Variable concat(const std::vector<Variable>& xs, int axis) {
  FLOTILLA_ENFORCE(!xs.empty(), "layers::concat needs at least one input");
  LayerHelper helper("concat");
  Variable out = helper.CreateTmp(xs[0].dtype());
  helper.Append(OpDesc("concat").In("X", Names(xs)).Out("Out", {out.name()}).Set("axis", axis));
  return out;
}

Variable fill_constant(std::vector<int64_t> shape, DType dtype, double value, const std::string& name) {
  LayerHelper helper("fill_constant");
  Variable out = name.empty() ? helper.CreateTmp(dtype) : Variable(&helper.main_block(), name);
  if (!name.empty()) helper.main_block().CreateVar(name).dtype = dtype;
  helper.Append(OpDesc("fill_constant")
                    .Out("Out", {out.name()})
                    .Set("shape", shape)
                    .Set("dtype", static_cast<int32_t>(dtype))
                    .Set("value", value));
  return out;
}

Variable fill_constant_batch_size_like(const Variable& input, std::vector<int64_t> shape, DType dtype,
                                       double value, int input_dim_idx, int output_dim_idx) {
  LayerHelper helper("fill_constant_batch_size_like");
  Variable out = helper.CreateTmp(dtype);
  helper.Append(OpDesc("fill_constant_batch_size_like")
                    .In("Input", {input.name()})
                    .Out("Out", {out.name()})
                    .Set("shape", shape)
                    .Set("dtype", static_cast<int32_t>(dtype))
                    .Set("value", value)
                    .Set("input_dim_idx", static_cast<int32_t>(input_dim_idx))
                    .Set("output_dim_idx", static_cast<int32_t>(output_dim_idx)));
  out.set_stop_gradient(true);
  return out;
}

Variable cross_entropy(const Variable& input, const Variable& label, bool soft_label,
                       int64_t ignore_index) {
  LayerHelper helper("cross_entropy");
  Variable out = helper.CreateTmp(input.dtype());
  helper.Append(OpDesc("cross_entropy")
                    .In("X", {input.name()})
                    .In("Label", {label.name()})
                    .Out("Y", {out.name()})
                    .Set("soft_label", soft_label)
                    .Set("ignore_index", ignore_index));
  return out;
}

Variable square_error_cost(const Variable& input, const Variable& label) {
  return square(elementwise_sub(input, label));
}

Variable softmax_with_cross_entropy(const Variable& logits, const Variable& label, bool soft_label,
                                    int64_t ignore_index) {
  LayerHelper helper("softmax_with_cross_entropy");
  Variable softmax_out = helper.CreateTmp(logits.dtype(), "softmax");
  Variable loss = helper.CreateTmp(logits.dtype());
  helper.Append(OpDesc("softmax_with_cross_entropy")
                    .In("Logits", {logits.name()})
                    .In("Label", {label.name()})
                    .Out("Softmax", {softmax_out.name()})
                    .Out("Loss", {loss.name()})
                    .Set("soft_label", soft_label)
                    .Set("ignore_index", ignore_index));
  return loss;
}

Variable sigmoid_cross_entropy_with_logits(const Variable& x, const Variable& label,
                                           int64_t ignore_index, bool normalize) {
  LayerHelper helper("sigmoid_cross_entropy_with_logits");
  Variable out = helper.CreateTmp(x.dtype());
  helper.Append(OpDesc("sigmoid_cross_entropy_with_logits")
                    .In("X", {x.name()})
                    .In("Label", {label.name()})
                    .Out("Out", {out.name()})
                    .Set("ignore_index", ignore_index)
                    .Set("normalize", normalize));
  return out;
}

Variable log_loss(const Variable& input, const Variable& label, float epsilon) {
  LayerHelper helper("log_loss");
  Variable loss = helper.CreateTmp(input.dtype());
  helper.Append(OpDesc("log_loss")
                    .In("Predicted", {input.name()})
                    .In("Labels", {label.name()})
                    .Out("Loss", {loss.name()})
                    .Set("epsilon", epsilon));
  return loss;
}

Variable accuracy(const Variable& input, const Variable& label, int k) {
  LayerHelper helper("accuracy");
  Variable acc = helper.CreateTmp(DType::kFloat32, "acc");
  Variable correct = helper.CreateTmp(DType::kInt64, "correct");
  Variable total = helper.CreateTmp(DType::kInt64, "total");
  helper.Append(OpDesc("accuracy")
                    .In("Out", {input.name()})
                    .In("Label", {label.name()})
                    .Out("Accuracy", {acc.name()})
                    .Out("Correct", {correct.name()})
                    .Out("Total", {total.name()})
                    .Set("k", k));
  return acc;
}

AucOutputs auc(const Variable& input, const Variable& label, int num_thresholds) {
  LayerHelper helper("auc");
  Dims state_shape{num_thresholds + 1};
  Variable pos = create_global_var(state_shape, 0, DType::kInt64, true, helper.name() + ".stat_pos");
  Variable neg = create_global_var(state_shape, 0, DType::kInt64, true, helper.name() + ".stat_neg");
  Variable out = helper.CreateTmp(DType::kFloat64, "auc");
  helper.Append(OpDesc("auc")
                    .In("Predict", {input.name()})
                    .In("Label", {label.name()})
                    .In("StatPos", {pos.name()})
                    .In("StatNeg", {neg.name()})
                    .Out("AUC", {out.name()})
                    .Out("StatPosOut", {pos.name()})
                    .Out("StatNegOut", {neg.name()})
                    .Set("num_thresholds", num_thresholds)
                    .Set("curve", std::string("ROC")));
  return {out, pos, neg};
}

Variable create_parameter(Dims shape, DType dtype, const ParamAttr& attr, bool is_bias,
                          initializer::InitializerPtr default_initializer) {
  LayerHelper helper("create_parameter");
  if (!default_initializer) {
    default_initializer = is_bias ? initializer::InitializerPtr(std::make_shared<initializer::Constant>(0.0))
                                  : std::make_shared<initializer::Xavier>();
  }
  return helper.CreateParameter(attr, shape, dtype, is_bias, default_initializer);
}

Variable create_global_var(Dims shape, double value, DType dtype, bool persistable,
                           const std::string& name) {
  std::string var_name = name.empty() ? UniqueName("global_var") : name;
  Block& main = default_main_program().global_block();
  Block& startup = default_startup_program().global_block();
  for (Block* block : {&main, &startup}) {
    VarDesc& v = block->CreateVar(var_name);
    v.shape = shape;
    v.dtype = dtype;
    v.persistable = persistable;
    v.stop_gradient = true;
  }
  initializer::Constant(value).Append(startup, startup.Var(var_name));
  return Variable(&main, var_name);
}

}  // namespace flotilla::layers
