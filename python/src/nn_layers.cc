// Convolutional-network layers (flotilla._core.layers, next to the other
// layers) and their Paddle 2.x functional forms (flotilla._core.functional).
// Arguments keep the C++ names and order, all required; the Python modules
// (flotilla.nn_layers, flotilla.nn.cnn_functional) give Paddle's keyword
// names, defaults and docstrings on top.
//
// Sizes and paddings arrive in any of Paddle's spellings and are turned
// into the C++ types here: a size is an int or (h, w); a padding is an
// int, (h, w), (top, bottom, left, right), Paddle 2.x's per-dimension pairs
// ([[0, 0], [0, 0], [top, bottom], [left, right]] or [[top, bottom],
// [left, right]]), or "SAME"/"VALID" in either case.
#include <algorithm>
#include <cctype>

#include "bindings.h"
#include "flotilla/api/layers.h"
#include "flotilla/api/nn_functional.h"

namespace flotilla::python {

namespace {

using layers::Padding;
using layers::Size2;

std::string Repr(const py::handle& v) { return py::repr(v).cast<std::string>(); }

std::vector<int> Ints(const py::handle& v, const char* what) {
  try {
    return v.cast<std::vector<int>>();
  } catch (const py::cast_error&) {
    FLOTILLA_THROW(InvalidArgument, what, " must be an int or a list of ints, got ", Repr(v));
  }
}

Size2 ToSize2(const py::handle& v, const char* what) {
  if (py::isinstance<py::int_>(v)) return Size2(v.cast<int>());
  std::vector<int> s = Ints(v, what);
  FLOTILLA_ENFORCE(s.size() == 1 || s.size() == 2, what, " must be an int or [h, w], got ", Repr(v));
  return s.size() == 1 ? Size2(s[0]) : Size2(s[0], s[1]);
}

// [[0, 0], [0, 0], [t, b], [l, r]] or [[t, b], [l, r]] -> {t, b, l, r}.
std::optional<Padding> FromPairs(const py::sequence& seq, const char* what) {
  if (seq.size() == 0 || !py::isinstance<py::sequence>(seq[0]) || py::isinstance<py::str>(seq[0])) {
    return std::nullopt;
  }
  std::vector<std::vector<int>> pairs = seq.cast<std::vector<std::vector<int>>>();
  const size_t skip = pairs.size() == 4 ? 2 : 0;
  FLOTILLA_ENFORCE((pairs.size() == 4 || pairs.size() == 2) &&
                       std::all_of(pairs.begin(), pairs.end(), [](auto& p) { return p.size() == 2; }),
                   what, ": per-dimension paddings must be 2 or 4 pairs, got ", Repr(seq));
  for (size_t i = 0; i < skip; ++i) {
    FLOTILLA_ENFORCE(pairs[i][0] == 0 && pairs[i][1] == 0, what,
                     ": the batch and channel dimensions cannot be padded (NCHW), got ", Repr(seq));
  }
  return Padding{pairs[skip][0], pairs[skip][1], pairs[skip + 1][0], pairs[skip + 1][1]};
}

Padding ToPadding(const py::handle& v, const char* what) {
  if (py::isinstance<py::str>(v)) {
    std::string algo = v.cast<std::string>();
    std::transform(algo.begin(), algo.end(), algo.begin(), [](unsigned char c) { return std::toupper(c); });
    FLOTILLA_ENFORCE(algo == "SAME" || algo == "VALID", what, " must be 'SAME', 'VALID' or numbers, got ",
                     Repr(v));
    Padding p(0);
    p.algorithm = algo;
    return p;
  }
  if (py::isinstance<py::int_>(v)) return Padding(v.cast<int>());
  if (py::isinstance<py::sequence>(v)) {
    if (auto pairs = FromPairs(v.cast<py::sequence>(), what)) return *pairs;
  }
  std::vector<int> s = Ints(v, what);
  FLOTILLA_ENFORCE(s.size() == 2 || s.size() == 4, what,
                   " must be an int, [h, w] or [top, bottom, left, right], got ", Repr(v));
  return s.size() == 2 ? Padding{s[0], s[1]} : Padding{s[0], s[1], s[2], s[3]};
}

Variable OrNone(const std::optional<Variable>& v) { return v ? *v : Variable(); }

void BindConvolution(py::module_& m) {
  m.def("conv2d",
        [](const Variable& input, int num_filters, const py::object& filter_size, const py::object& stride,
           const py::object& padding, const py::object& dilation, int groups, const ParamAttr& param_attr,
           const ParamAttr& bias_attr, const std::string& act, const std::string& name) {
          return layers::conv2d(input, num_filters, ToSize2(filter_size, "conv2d: filter_size"),
                                ToSize2(stride, "conv2d: stride"), ToPadding(padding, "conv2d: padding"),
                                ToSize2(dilation, "conv2d: dilation"), groups, param_attr, bias_attr, act, name);
        },
        py::arg("input"), py::arg("num_filters"), py::arg("filter_size"), py::arg("stride"), py::arg("padding"),
        py::arg("dilation"), py::arg("groups"), py::arg("param_attr"), py::arg("bias_attr"), py::arg("act"),
        py::arg("name"));
  m.def("conv2d_transpose",
        [](const Variable& input, int num_filters, const py::object& filter_size,
           std::vector<int32_t> output_size, const py::object& stride, const py::object& padding,
           const py::object& dilation, int groups, const ParamAttr& param_attr, const ParamAttr& bias_attr,
           const std::string& act, const std::string& name) {
          Size2 filter = filter_size.is_none() ? Size2(0) : ToSize2(filter_size, "conv2d_transpose: filter_size");
          return layers::conv2d_transpose(input, num_filters, filter, std::move(output_size),
                                          ToSize2(stride, "conv2d_transpose: stride"),
                                          ToPadding(padding, "conv2d_transpose: padding"),
                                          ToSize2(dilation, "conv2d_transpose: dilation"), groups, param_attr,
                                          bias_attr, act, name);
        },
        py::arg("input"), py::arg("num_filters"), py::arg("filter_size"), py::arg("output_size"),
        py::arg("stride"), py::arg("padding"), py::arg("dilation"), py::arg("groups"), py::arg("param_attr"),
        py::arg("bias_attr"), py::arg("act"), py::arg("name"));
}

void BindPooling(py::module_& m) {
  m.def("pool2d",
        [](const Variable& input, const py::object& pool_size, const std::string& pool_type,
           const py::object& pool_stride, const py::object& pool_padding, bool global_pooling, bool ceil_mode,
           bool exclusive, const std::string& name) {
          return layers::pool2d(input, ToSize2(pool_size, "pool2d: pool_size"), pool_type,
                                ToSize2(pool_stride, "pool2d: pool_stride"),
                                ToPadding(pool_padding, "pool2d: pool_padding"), global_pooling, ceil_mode,
                                exclusive, name);
        },
        py::arg("input"), py::arg("pool_size"), py::arg("pool_type"), py::arg("pool_stride"),
        py::arg("pool_padding"), py::arg("global_pooling"), py::arg("ceil_mode"), py::arg("exclusive"),
        py::arg("name"));
  m.def("adaptive_pool2d",
        [](const Variable& input, const py::object& pool_size, const std::string& pool_type,
           const std::string& name) {
          return layers::adaptive_pool2d(input, ToSize2(pool_size, "adaptive_pool2d: pool_size"), pool_type, name);
        },
        py::arg("input"), py::arg("pool_size"), py::arg("pool_type"), py::arg("name"));
}

void BindNormalization(py::module_& m) {
  m.def("batch_norm",
        [](const Variable& input, const std::string& act, bool is_test, float momentum, float epsilon,
           const ParamAttr& param_attr, const ParamAttr& bias_attr, const std::string& name,
           const std::string& moving_mean_name, const std::string& moving_variance_name, bool use_global_stats) {
          return layers::batch_norm(input, {act, is_test, momentum, epsilon, param_attr, bias_attr, name,
                                            moving_mean_name, moving_variance_name, use_global_stats});
        },
        py::arg("input"), py::arg("act"), py::arg("is_test"), py::arg("momentum"), py::arg("epsilon"),
        py::arg("param_attr"), py::arg("bias_attr"), py::arg("name"), py::arg("moving_mean_name"),
        py::arg("moving_variance_name"), py::arg("use_global_stats"));
  m.def("layer_norm", &layers::layer_norm, py::arg("input"), py::arg("scale"), py::arg("shift"),
        py::arg("begin_norm_axis"), py::arg("epsilon"), py::arg("param_attr"), py::arg("bias_attr"),
        py::arg("act"));
  m.def("group_norm", &layers::group_norm, py::arg("input"), py::arg("groups"), py::arg("epsilon"),
        py::arg("param_attr"), py::arg("bias_attr"), py::arg("act"));
  m.def("dropout", &layers::dropout, py::arg("x"), py::arg("dropout_prob"), py::arg("is_test"), py::arg("seed"),
        py::arg("dropout_implementation"));
}

void BindLayoutAndLabels(py::module_& m) {
  m.def("flatten", &layers::flatten, py::arg("x"), py::arg("axis"));
  m.def("transpose", &layers::transpose, py::arg("x"), py::arg("perm"));
  m.def("pad2d", &layers::pad2d, py::arg("input"), py::arg("paddings"), py::arg("mode"), py::arg("pad_value"));
  m.def("image_resize", &layers::image_resize, py::arg("input"), py::arg("out_shape"), py::arg("scale"),
        py::arg("resample"), py::arg("align_corners"), py::arg("align_mode"));
  m.def("relu6", &layers::relu6, py::arg("x"), py::arg("threshold"));
  m.def("hard_swish", &layers::hard_swish, py::arg("x"), py::arg("threshold"), py::arg("scale"),
        py::arg("offset"));
  m.def("one_hot", &layers::one_hot, py::arg("input"), py::arg("depth"));
  m.def("label_smooth",
        [](const Variable& label, float epsilon, const std::optional<Variable>& prior_dist) {
          return layers::label_smooth(label, epsilon, OrNone(prior_dist));
        },
        py::arg("label"), py::arg("epsilon"), py::arg("prior_dist"));
}

void BindFunctional(py::module_& m) {
  m.def("conv2d",
        [](const Variable& x, const Variable& weight, const std::optional<Variable>& bias, const py::object& stride,
           const py::object& padding, const py::object& dilation, int groups) {
          return functional::conv2d(x, weight, OrNone(bias), ToSize2(stride, "conv2d: stride"),
                                    ToPadding(padding, "conv2d: padding"), ToSize2(dilation, "conv2d: dilation"),
                                    groups);
        },
        py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("stride"), py::arg("padding"),
        py::arg("dilation"), py::arg("groups"));
  m.def("conv2d_transpose",
        [](const Variable& x, const Variable& weight, const std::optional<Variable>& bias, const py::object& stride,
           const py::object& padding, const py::object& output_padding, int groups, const py::object& dilation,
           std::vector<int32_t> output_size) {
          return functional::conv2d_transpose(
              x, weight, OrNone(bias), ToSize2(stride, "conv2d_transpose: stride"),
              ToPadding(padding, "conv2d_transpose: padding"),
              ToSize2(output_padding, "conv2d_transpose: output_padding"), groups,
              ToSize2(dilation, "conv2d_transpose: dilation"), std::move(output_size));
        },
        py::arg("x"), py::arg("weight"), py::arg("bias"), py::arg("stride"), py::arg("padding"),
        py::arg("output_padding"), py::arg("groups"), py::arg("dilation"), py::arg("output_size"));
  m.def("batch_norm", &functional::batch_norm, py::arg("x"), py::arg("running_mean"), py::arg("running_var"),
        py::arg("weight"), py::arg("bias"), py::arg("training"), py::arg("momentum"), py::arg("epsilon"),
        py::arg("use_global_stats"));
  m.def("layer_norm",
        [](const Variable& x, const std::vector<int64_t>& normalized_shape, const std::optional<Variable>& weight,
           const std::optional<Variable>& bias, float epsilon) {
          return functional::layer_norm(x, normalized_shape, OrNone(weight), OrNone(bias), epsilon);
        },
        py::arg("x"), py::arg("normalized_shape"), py::arg("weight"), py::arg("bias"), py::arg("epsilon"));
  m.def("group_norm",
        [](const Variable& x, int num_groups, float epsilon, const std::optional<Variable>& weight,
           const std::optional<Variable>& bias) {
          return functional::group_norm(x, num_groups, epsilon, OrNone(weight), OrNone(bias));
        },
        py::arg("x"), py::arg("num_groups"), py::arg("epsilon"), py::arg("weight"), py::arg("bias"));
  m.def("one_hot", &functional::one_hot, py::arg("x"), py::arg("num_classes"));
  m.def("_to_padding", [](const py::object& p) {
    Padding v = ToPadding(p, "padding");
    return py::make_tuple(v.values, v.algorithm);
  }, py::arg("padding"), "The (values, algorithm) a padding argument means (for tests).");
}

}  // namespace

void BindNnLayers(py::module_& m) {
  py::module_ l = m.attr("layers").cast<py::module_>();
  BindConvolution(l);
  BindPooling(l);
  BindNormalization(l);
  BindLayoutAndLabels(l);
  py::module_ f = m.def_submodule("functional", "Paddle 2.x nn.functional layers over given weights.");
  BindFunctional(f);
}

}  // namespace flotilla::python
