// Optimizers (flotilla._core.optimizer): a learning rate is a float or a
// scheduled Variable; minimize() returns (optimize op types, [(param, grad)]).
#include "bindings.h"
#include "flotilla/api/optimizer.h"

namespace flotilla::python {

namespace {

using optimizer::Optimizer;
using RegPtr = std::shared_ptr<regularizer::WeightDecayRegularizer>;

optimizer::LearningRate ToRate(const py::handle& lr) {
  if (py::isinstance<Variable>(lr)) return optimizer::LearningRate(lr.cast<Variable>());
  return optimizer::LearningRate(lr.cast<float>());
}

py::tuple Minimize(Optimizer& opt, const Variable& loss, Program* startup,
                   const std::vector<std::string>& parameter_list, const std::set<std::string>& no_grad_set) {
  return MinimizeResultTuple(opt.minimize(loss, startup, parameter_list, no_grad_set));
}

}  // namespace

py::tuple MinimizeResultTuple(const optimizer::MinimizeResult& r) {
  std::vector<std::string> ops;
  for (const OpDesc* op : r.optimize_ops) ops.push_back(op->type);
  return py::make_tuple(ops, r.params_grads);
}

void BindOptimizers(py::module_& parent) {
  py::module_ m = parent.def_submodule("optimizer", "Optimizers: minimize(loss) appends backward + updates.");
  py::class_<Optimizer, std::shared_ptr<Optimizer>>(m, "Optimizer")
      .def("minimize", &Minimize, py::arg("loss"), py::arg("startup_program") = nullptr,
           py::arg("parameter_list") = std::vector<std::string>{},
           py::arg("no_grad_set") = std::set<std::string>{})
      .def_property_readonly("type", &Optimizer::type)
      .def_property_readonly("learning_rate_var", &Optimizer::learning_rate_var)
      .def_property_readonly("learning_rate", &Optimizer::learning_rate,
                             "The constant rate; InvalidArgumentError for a scheduled one.");
  py::class_<optimizer::SGD, Optimizer, std::shared_ptr<optimizer::SGD>>(m, "SGD")
      .def(py::init([](const py::handle& lr, RegPtr reg) {
             return std::make_shared<optimizer::SGD>(ToRate(lr), std::move(reg));
           }),
           py::arg("learning_rate"), py::arg("regularization") = nullptr);
  py::class_<optimizer::Momentum, Optimizer, std::shared_ptr<optimizer::Momentum>>(m, "Momentum")
      .def(py::init([](const py::handle& lr, float momentum, bool nesterov, RegPtr reg) {
             return std::make_shared<optimizer::Momentum>(ToRate(lr), momentum, nesterov, std::move(reg));
           }),
           py::arg("learning_rate"), py::arg("momentum"), py::arg("use_nesterov") = false,
           py::arg("regularization") = nullptr);
  py::class_<optimizer::Adam, Optimizer, std::shared_ptr<optimizer::Adam>>(m, "Adam")
      .def(py::init([](const py::handle& lr, float beta1, float beta2, float epsilon, RegPtr reg) {
             return std::make_shared<optimizer::Adam>(ToRate(lr), beta1, beta2, epsilon, std::move(reg));
           }),
           py::arg("learning_rate") = 0.001f, py::arg("beta1") = 0.9f, py::arg("beta2") = 0.999f,
           py::arg("epsilon") = 1e-8f, py::arg("regularization") = nullptr);
  py::class_<optimizer::Adagrad, Optimizer, std::shared_ptr<optimizer::Adagrad>>(m, "Adagrad")
      .def(py::init([](const py::handle& lr, float epsilon, float initial, RegPtr reg) {
             return std::make_shared<optimizer::Adagrad>(ToRate(lr), epsilon, initial, std::move(reg));
           }),
           py::arg("learning_rate"), py::arg("epsilon") = 1e-6f,
           py::arg("initial_accumulator_value") = 0.0f, py::arg("regularization") = nullptr);
}

}  // namespace flotilla::python
