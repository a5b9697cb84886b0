// Executor: feeds NumPy arrays without copying them, runs with the GIL
// released (other Python threads — a DataLoader's — keep going) and
// interruptible by Ctrl-C, and returns fetches as NumPy arrays that own the
// fetched copies.
#include "bindings.h"
#include "flotilla/framework/executor.h"
#include "interrupt.h"
#include "tensor.h"

namespace flotilla::python {

namespace {

// Arrays and tensors keep their dtype (a wrong one is reported by the
// executor, naming the variable); lists and scalars take the variable's.
FeedMap ToFeedMap(const Program& program, const py::dict& feed) {
  FeedMap out;
  const Block& block = program.global_block();
  for (auto [key, value] : feed) {
    std::string name = py::str(key);
    std::optional<DType> convert_to;
    if (!py::isinstance<py::array>(value) && !py::isinstance<Tensor>(value)) {
      if (const VarDesc* v = block.FindVar(name)) convert_to = v->dtype;
    }
    out.emplace(name, ToTensor(value, "feed '" + name + "'", convert_to));
  }
  return out;
}

py::list Run(Executor& exe, const Program& program, const py::dict& feed,
             const std::vector<std::string>& fetch_list, Scope* scope, bool return_numpy) {
  FeedMap feeds = ToFeedMap(program, feed);
  std::vector<Tensor> fetched;
  {
    Interruptible interruptible;
    py::gil_scoped_release release;
    fetched = exe.Run(program, feeds, fetch_list, scope);
    feeds.clear();
  }
  DrainReleases();
  py::list out;
  for (Tensor& t : fetched) {
    if (return_numpy) {
      out.append(AdoptAsNumpy(std::move(t)));
    } else {
      out.append(py::cast(std::move(t)));
    }
  }
  return out;
}

}  // namespace

void BindExecutor(py::module_& m) {
  py::class_<Executor>(m, "Executor", "Runs programs on a Place (Paddle's Executor).")
      .def(py::init<>())
      .def("_run", &Run, py::arg("program"), py::arg("feed"), py::arg("fetch_list"),
           py::arg("scope") = nullptr, py::arg("return_numpy") = true,
           "Runs ``program`` once: feeds arrays by name, returns the fetched variables.")
      .def("_local_scope", &Executor::local_scope, py::arg("program"), py::arg("scope") = nullptr,
           py::return_value_policy::reference_internal,
           "The scope of ``program``'s temporaries and feeds (None before its first run).")
      .def(
          "close",
          [](Executor& exe) {
            Interruptible interruptible;
            py::gil_scoped_release release;
            exe.Close();
          },
          "Tells the parameter servers this trainer has finished (idempotent).");
}

}  // namespace flotilla::python
