// Layers, initializers, regularizers, ParamAttr and learning-rate schedules
// (flotilla._core.layers). Arguments keep the C++ names and order; the
// Python modules (flotilla.static.nn, fluid.layers, ...) give Paddle's
// keyword names, defaults and docstrings on top.
#include "bindings.h"
#include "flotilla/api/layers.h"
#include "flotilla/api/learning_rate_scheduler.h"
#include "tensor.h"

namespace flotilla::python {

namespace {

using initializer::Initializer;
using regularizer::WeightDecayRegularizer;

void BindInitializers(py::module_& m) {
  py::class_<Initializer, std::shared_ptr<Initializer>>(m, "Initializer");
  py::class_<initializer::Constant, Initializer, std::shared_ptr<initializer::Constant>>(m, "Constant")
      .def(py::init<double>(), py::arg("value") = 0.0);
  py::class_<initializer::Uniform, Initializer, std::shared_ptr<initializer::Uniform>>(m, "Uniform")
      .def(py::init<double, double, int>(), py::arg("low") = -1.0, py::arg("high") = 1.0,
           py::arg("seed") = 0);
  py::class_<initializer::Normal, Initializer, std::shared_ptr<initializer::Normal>>(m, "Normal")
      .def(py::init<double, double, int>(), py::arg("mean") = 0.0, py::arg("std") = 1.0,
           py::arg("seed") = 0);
  py::class_<initializer::Xavier, Initializer, std::shared_ptr<initializer::Xavier>>(m, "Xavier")
      .def(py::init<bool, int64_t, int64_t, int>(), py::arg("uniform") = true, py::arg("fan_in") = 0,
           py::arg("fan_out") = 0, py::arg("seed") = 0);
}

void BindRegularizers(py::module_& m) {
  py::class_<WeightDecayRegularizer, std::shared_ptr<WeightDecayRegularizer>>(m, "WeightDecayRegularizer")
      .def_property_readonly("coeff", &WeightDecayRegularizer::coeff)
      .def_property_readonly("type", &WeightDecayRegularizer::type);
  py::class_<regularizer::L2DecayRegularizer, WeightDecayRegularizer,
             std::shared_ptr<regularizer::L2DecayRegularizer>>(m, "L2Decay")
      .def(py::init<float>(), py::arg("coeff") = 0.0f);
  py::class_<regularizer::L1DecayRegularizer, WeightDecayRegularizer,
             std::shared_ptr<regularizer::L1DecayRegularizer>>(m, "L1Decay")
      .def(py::init<float>(), py::arg("coeff") = 0.0f);
}

void BindParamAttr(py::module_& m) {
  py::class_<ParamAttr>(m, "ParamAttr")
      .def(py::init([](std::string name, std::shared_ptr<Initializer> init, bool trainable,
                       std::shared_ptr<WeightDecayRegularizer> reg, bool enabled, float learning_rate) {
             ParamAttr a;
             a.name = std::move(name);
             a.initializer = std::move(init);
             a.trainable = trainable;
             a.regularizer = std::move(reg);
             a.enabled = enabled;
             a.learning_rate = learning_rate;
             return a;
           }),
           py::arg("name") = "", py::arg("initializer") = nullptr, py::arg("trainable") = true,
           py::arg("regularizer") = nullptr, py::arg("enabled") = true, py::arg("learning_rate") = 1.0f)
      .def_readonly("learning_rate", &ParamAttr::learning_rate)
      .def_readonly("name", &ParamAttr::name)
      .def_readonly("trainable", &ParamAttr::trainable)
      .def_readonly("enabled", &ParamAttr::enabled);
}

void BindActivationsAndMath(py::module_& m) {
  m.def("relu", &layers::relu, py::arg("x"));
  m.def("tanh", &layers::tanh, py::arg("x"));
  m.def("sigmoid", &layers::sigmoid, py::arg("x"));
  m.def("square", &layers::square, py::arg("x"));
  m.def("softsign", &layers::softsign, py::arg("x"));
  m.def("softmax", &layers::softmax, py::arg("x"), py::arg("axis") = -1);
  m.def("scale", &layers::scale, py::arg("x"), py::arg("scale") = 1.0f, py::arg("bias") = 0.0f,
        py::arg("bias_after_scale") = true);
  m.def("mean", &layers::mean, py::arg("x"));
  m.def("reduce_sum", &layers::reduce_sum, py::arg("x"), py::arg("dim"), py::arg("keep_dim"));
  m.def("reduce_mean", &layers::reduce_mean, py::arg("x"), py::arg("dim"), py::arg("keep_dim"));
  m.def("elementwise_add", &layers::elementwise_add, py::arg("x"), py::arg("y"), py::arg("axis") = -1,
        py::arg("act") = "");
  m.def("elementwise_sub", &layers::elementwise_sub, py::arg("x"), py::arg("y"), py::arg("axis") = -1,
        py::arg("act") = "");
  m.def("elementwise_mul", &layers::elementwise_mul, py::arg("x"), py::arg("y"), py::arg("axis") = -1,
        py::arg("act") = "");
  m.def("elementwise_div", &layers::elementwise_div, py::arg("x"), py::arg("y"), py::arg("axis") = -1,
        py::arg("act") = "");
  m.def("elementwise_max", &layers::elementwise_max, py::arg("x"), py::arg("y"), py::arg("axis") = -1,
        py::arg("act") = "");
  m.def("elementwise_min", &layers::elementwise_min, py::arg("x"), py::arg("y"), py::arg("axis") = -1,
        py::arg("act") = "");
  m.def("compare", &layers::compare, py::arg("type"), py::arg("x"), py::arg("y"), py::arg("axis") = -1);
  m.def("cos_sim", &layers::cos_sim, py::arg("x"), py::arg("y"), py::arg("eps") = 0.0f);
  m.def("matmul", &layers::matmul, py::arg("x"), py::arg("y"), py::arg("transpose_x") = false,
        py::arg("transpose_y") = false, py::arg("alpha") = 1.0f);
  m.def("sums", &layers::sums, py::arg("xs"));
  m.def("concat", &layers::concat, py::arg("xs"), py::arg("axis") = 0);
  m.def("reshape", &layers::reshape, py::arg("x"), py::arg("shape"));
  m.def("cast", [](const Variable& x, const py::handle& dtype) { return layers::cast(x, ToDType(dtype)); },
        py::arg("x"), py::arg("dtype"));
  m.def("fill_constant",
        [](std::vector<int64_t> shape, const py::handle& dtype, double value, const std::string& name) {
          return layers::fill_constant(std::move(shape), ToDType(dtype), value, name);
        },
        py::arg("shape"), py::arg("dtype"), py::arg("value"), py::arg("name") = "");
  m.def("fill_constant_batch_size_like",
        [](const Variable& input, std::vector<int64_t> shape, const py::handle& dtype, double value,
           int input_dim_idx, int output_dim_idx) {
          return layers::fill_constant_batch_size_like(input, std::move(shape), ToDType(dtype), value,
                                                       input_dim_idx, output_dim_idx);
        },
        py::arg("input"), py::arg("shape"), py::arg("dtype"), py::arg("value"), py::arg("input_dim_idx") = 0,
        py::arg("output_dim_idx") = 0);
}

void BindLossesAndMetrics(py::module_& m) {
  m.def("cross_entropy", &layers::cross_entropy, py::arg("input"), py::arg("label"),
        py::arg("soft_label") = false, py::arg("ignore_index") = -100);
  m.def("square_error_cost", &layers::square_error_cost, py::arg("input"), py::arg("label"));
  m.def("softmax_with_cross_entropy", &layers::softmax_with_cross_entropy, py::arg("logits"),
        py::arg("label"), py::arg("soft_label") = false, py::arg("ignore_index") = -100);
  m.def("sigmoid_cross_entropy_with_logits", &layers::sigmoid_cross_entropy_with_logits, py::arg("x"),
        py::arg("label"), py::arg("ignore_index") = -100, py::arg("normalize") = false);
  m.def("log_loss", &layers::log_loss, py::arg("input"), py::arg("label"), py::arg("epsilon") = 1e-4f);
  m.def("accuracy", &layers::accuracy, py::arg("input"), py::arg("label"), py::arg("k") = 1);
  m.def("auc", [](const Variable& input, const Variable& label, int num_thresholds) {
    layers::AucOutputs o = layers::auc(input, label, num_thresholds);
    return py::make_tuple(o.auc, o.stat_pos, o.stat_neg);
  }, py::arg("input"), py::arg("label"), py::arg("num_thresholds") = 4095);
}

void BindParameterLayers(py::module_& m) {
  m.def("data",
        [](const std::string& name, Dims shape, const py::handle& dtype, bool append_batch_size, int lod_level) {
          return layers::data(name, std::move(shape), ToDType(dtype), append_batch_size, lod_level);
        },
        py::arg("name"), py::arg("shape"), py::arg("dtype"), py::arg("append_batch_size"),
        py::arg("lod_level") = 0);
  m.def("fc", py::overload_cast<const std::vector<Variable>&, int64_t, int, const ParamAttr&,
                                const ParamAttr&, const std::string&, const std::string&>(&layers::fc),
        py::arg("inputs"), py::arg("size"), py::arg("num_flatten_dims"), py::arg("param_attr"),
        py::arg("bias_attr"), py::arg("act"), py::arg("name"));
  m.def("embedding",
        [](const Variable& input, std::vector<int64_t> size, bool is_sparse, bool is_distributed,
           int64_t padding_idx, const ParamAttr& attr, const py::handle& dtype) {
          return layers::embedding(input, std::move(size), is_sparse, is_distributed, padding_idx, attr,
                                   ToDType(dtype));
        },
        py::arg("input"), py::arg("size"), py::arg("is_sparse"), py::arg("is_distributed"),
        py::arg("padding_idx"), py::arg("param_attr"), py::arg("dtype"));
  m.def("create_parameter",
        [](Dims shape, const py::handle& dtype, const ParamAttr& attr, bool is_bias,
           std::shared_ptr<Initializer> init) {
          return layers::create_parameter(std::move(shape), ToDType(dtype), attr, is_bias, std::move(init));
        },
        py::arg("shape"), py::arg("dtype"), py::arg("attr"), py::arg("is_bias") = false,
        py::arg("default_initializer") = nullptr);
  m.def("create_global_var",
        [](Dims shape, double value, const py::handle& dtype, bool persistable, const std::string& name) {
          return layers::create_global_var(std::move(shape), value, ToDType(dtype), persistable, name);
        },
        py::arg("shape"), py::arg("value"), py::arg("dtype"), py::arg("persistable") = true,
        py::arg("name") = "");
}

void BindSchedules(py::module_& m) {
  m.def("exponential_decay", &layers::exponential_decay, py::arg("learning_rate"), py::arg("decay_steps"),
        py::arg("decay_rate"), py::arg("staircase") = false);
  m.def("natural_exp_decay", &layers::natural_exp_decay, py::arg("learning_rate"), py::arg("decay_steps"),
        py::arg("decay_rate"), py::arg("staircase") = false);
  m.def("inverse_time_decay", &layers::inverse_time_decay, py::arg("learning_rate"),
        py::arg("decay_steps"), py::arg("decay_rate"), py::arg("staircase") = false);
  m.def("polynomial_decay", &layers::polynomial_decay, py::arg("learning_rate"), py::arg("decay_steps"),
        py::arg("end_learning_rate") = 0.0001f, py::arg("power") = 1.0f, py::arg("cycle") = false);
  m.def("piecewise_decay", &layers::piecewise_decay, py::arg("boundaries"), py::arg("values"));
  m.def("cosine_decay", &layers::cosine_decay, py::arg("learning_rate"), py::arg("step_each_epoch"),
        py::arg("epochs"));
  m.def("noam_decay", &layers::noam_decay, py::arg("d_model"), py::arg("warmup_steps"),
        py::arg("learning_rate") = 1.0f);
  m.def("linear_lr_warmup",
        py::overload_cast<const Variable&, int64_t, float, float>(&layers::linear_lr_warmup),
        py::arg("learning_rate"), py::arg("warmup_steps"), py::arg("start_lr"), py::arg("end_lr"));
  m.def("linear_lr_warmup", py::overload_cast<float, int64_t, float, float>(&layers::linear_lr_warmup),
        py::arg("learning_rate"), py::arg("warmup_steps"), py::arg("start_lr"), py::arg("end_lr"));
}

}  // namespace

void BindLayers(py::module_& m) {
  py::module_ init = m.def_submodule("initializer", "Parameter initializers.");
  BindInitializers(init);
  py::module_ reg = m.def_submodule("regularizer", "Weight-decay regularizers.");
  BindRegularizers(reg);
  BindParamAttr(m);
  py::module_ l = m.def_submodule("layers", "Layers: functions that append ops to the default programs.");
  BindActivationsAndMath(l);
  BindLossesAndMetrics(l);
  BindParameterLayers(l);
  BindSchedules(l);
  BindSequenceLayers(l);
}

}  // namespace flotilla::python
