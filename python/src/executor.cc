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

// The dtype a feed is converted to (once, as Paddle does), if any: lists and
// scalars take the variable's; float64 arrays fed to a float32 variable
// become float32. Other arrays and tensors keep their dtype, and a wrong one
// is reported by the executor, naming the variable and both dtypes.
std::optional<DType> FeedConversion(const Block& block, const std::string& name, const py::handle& value) {
  const VarDesc* v = block.FindVar(name);
  if (v == nullptr || py::isinstance<Tensor>(value)) return std::nullopt;
  if (!py::isinstance<py::array>(value)) return v->dtype;
  const py::dtype dt = py::reinterpret_borrow<py::array>(value).dtype();
  const bool float64 = dt.kind() == 'f' && dt.itemsize() == 8;
  if (v->dtype == DType::kFloat32 && float64) return DType::kFloat32;
  return std::nullopt;
}

}  // namespace

FeedMap ToFeedMap(const Program& program, const py::dict& feed) {
  FeedMap out;
  const Block& block = program.global_block();
  for (auto [key, value] : feed) {
    std::string name = py::str(key);
    out.emplace(name, ToTensor(value, "feed '" + name + "'", FeedConversion(block, name, value)));
  }
  return out;
}

namespace {

// The names of what to fetch: None, a Variable, a name, or a sequence of
// Variables and names (read here rather than in Python: exe.run's fixed
// cost is most of a small model's step).
std::vector<std::string> FetchNames(const py::handle& fetch_list) {
  std::vector<std::string> names;
  const auto add = [&names](const py::handle& item) {
    if (py::isinstance<py::str>(item)) {
      names.push_back(item.cast<std::string>());
    } else if (py::isinstance<Variable>(item)) {
      names.push_back(item.cast<const Variable&>().name());
    } else {
      throw py::type_error("Executor.run: fetch_list items must be Variables or names, got " +
                           py::str(py::type::handle_of(item).attr("__name__")).cast<std::string>());
    }
  };
  if (fetch_list.is_none()) return names;
  if (py::isinstance<py::str>(fetch_list) || py::isinstance<Variable>(fetch_list)) {
    add(fetch_list);
    return names;
  }
  for (const py::handle item : fetch_list) add(item);
  return names;
}

// The next feed from `next` (a callable returning a dict), taken with the
// GIL on the executor's thread.
FeedSource FeedsFrom(const Program& program, const py::object& next) {
  return [&program, &next] {
    py::gil_scoped_acquire gil;
    py::object feed = next();
    if (!py::isinstance<py::dict>(feed)) {
      throw py::type_error("Executor.run: the feed source must return a dict of name → array, got " +
                           py::str(py::type::handle_of(feed).attr("__name__")).cast<std::string>());
    }
    return ToFeedMap(program, feed.cast<py::dict>());
  };
}

// Runs `program` as its run settings say (C++'s Executor::Run loops over
// the iterations); `feed` is a dict fed to every iteration, or a callable
// giving each iteration's dict (a DataLoader's next batch).
py::list Run(Executor& exe, const Program& program, const py::object& feed, const py::handle& fetch_handles,
             Scope* scope, bool return_numpy) {
  const std::vector<std::string> fetch_list = FetchNames(fetch_handles);
  const bool from_source = !py::isinstance<py::dict>(feed);
  if (from_source && !PyCallable_Check(feed.ptr())) {
    throw py::type_error("Executor.run: feed must be a dict of name → array, got " +
                         py::str(py::type::handle_of(feed).attr("__name__")).cast<std::string>());
  }
  FeedMap feeds = from_source ? FeedMap{} : ToFeedMap(program, feed.cast<py::dict>());
  std::vector<Tensor> fetched;
  {
    Interruptible interruptible;
    py::gil_scoped_release release;
    fetched = from_source ? exe.RunFrom(program, FeedsFrom(program, feed), fetch_list, scope)
                          : exe.Run(program, feeds, fetch_list, scope);
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
      .def("_run", &Run, py::arg("program"), py::arg("feed"), py::arg("fetch_list") = py::none(),
           py::arg("scope") = nullptr, py::arg("return_numpy") = true,
           "Runs ``program`` as its run settings say (``Program._run_settings``): ``feed`` is a dict of arrays "
           "by name fed to each iteration, or a callable returning each iteration's dict; returns the last "
           "iteration's fetched variables (None, a Variable, a name, or a list of them). ``scope`` None: the "
           "global scope.")
      .def("_local_scope", &Executor::local_scope, py::arg("program"), py::arg("scope") = nullptr,
           py::return_value_policy::reference_internal,
           "The scope of ``program``'s temporaries and feeds (None before its first run).")
      .def("_drop_local_scope", &Executor::DropLocalScope, py::arg("program"), py::arg("scope") = nullptr,
           "Frees ``program``'s temporaries (ExecutionStrategy.num_iteration_per_drop_scope).")
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
