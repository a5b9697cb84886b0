// Executor: feeds NumPy arrays without copying them, runs with the GIL
// released (so other Python threads — a DataLoader's — keep going and
// Ctrl-C is seen between ops), and returns fetches as NumPy arrays.
#include <pybind11/stl.h>

#include "bindings.h"
#include "flotilla/framework/executor.h"
#include "tensor.h"

namespace flotilla::python {

namespace {

FeedMap ToFeedMap(const py::dict& feed) {
  FeedMap out;
  for (auto [key, value] : feed) {
    std::string name = py::str(key);
    out.emplace(name, ToTensor(value, "feed '" + name + "'"));
  }
  return out;
}

py::list Run(Executor& exe, const Program& program, const py::dict& feed,
             const std::vector<std::string>& fetch_list, Scope* scope) {
  FeedMap feeds = ToFeedMap(feed);
  std::vector<Tensor> fetched;
  {
    py::gil_scoped_release release;
    fetched = exe.Run(program, feeds, fetch_list, scope);
    feeds.clear();  // drop the array references while the GIL is released
  }
  py::list out;
  for (const Tensor& t : fetched) out.append(ToNumpy(t));
  return out;
}

}  // namespace

void BindExecutor(py::module_& m) {
  py::class_<Executor>(m, "Executor", "Runs programs on a Place (Paddle's Executor).")
      .def(py::init<>())
      .def("_run", &Run, py::arg("program"), py::arg("feed"), py::arg("fetch_list"),
           py::arg("scope") = nullptr,
           "Runs `program` once: feeds arrays by name, returns the fetched variables as arrays.")
      .def(
          "close", [](Executor& exe) {
            py::gil_scoped_release release;
            exe.Close();
          },
          "Tells the parameter servers this trainer has finished (idempotent).");
}

}  // namespace flotilla::python
