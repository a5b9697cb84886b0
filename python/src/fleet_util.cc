// fleet.util's collectives on host values (flotilla._core.fleet_util):
// Paddle 2.x's `fleet.util.all_reduce(np_array, mode)` and
// `all_gather(value)` between the trainers of a collective job, over the
// fleet's process group (communicator 0, queued behind any gradient
// all-reduce already issued). One worker: the value itself. Blocks, without
// the GIL and interruptible, until every trainer has made the same call.
#include "bindings.h"
#include "flotilla/fleet/fleet.h"
#include "tensor.h"

namespace flotilla::python {

namespace {

comm::ReduceOp ToReduceOp(const std::string& mode) {
  if (mode == "sum") return comm::ReduceOp::kSum;
  if (mode == "max") return comm::ReduceOp::kMax;
  if (mode == "min") return comm::ReduceOp::kMin;
  FLOTILLA_THROW(InvalidArgument, "fleet.util.all_reduce: mode must be 'sum', 'max' or 'min', got '", mode, "'");
}

// A contiguous copy of `value` (an array, list or scalar) in its own dtype.
Tensor OwnedCopy(const py::handle& value, const char* what) {
  return ToTensor(value, what).Clone();
}

py::array AllReduce(const py::handle& value, const std::string& mode) {
  Tensor t = OwnedCopy(value, "fleet.util.all_reduce input");
  const comm::ReduceOp op = ToReduceOp(mode);
  if (auto group = fleet::default_fleet().process_group()) {
    Interruptible interruptible;
    py::gil_scoped_release release;
    group->allreduce(t, op);
  }
  return AdoptAsNumpy(std::move(t));
}

py::array AllGather(const py::handle& value) {
  Tensor t = OwnedCopy(value, "fleet.util.all_gather input");
  auto group = fleet::default_fleet().process_group();
  if (!group) return AdoptAsNumpy(std::move(t));
  Tensor out;
  {
    Interruptible interruptible;
    py::gil_scoped_release release;
    group->allgather(t, out);
  }
  return AdoptAsNumpy(std::move(out));
}

}  // namespace

void BindFleetUtil(py::module_& parent) {
  py::module_ m = parent.def_submodule("fleet_util", "fleet.util's collectives on host values.");
  m.def("all_reduce", &AllReduce, py::arg("input"), py::arg("mode") = "sum",
        "The element-wise sum (max, min) of `input` over every trainer, as a new array.");
  m.def("all_gather", &AllGather, py::arg("input"),
        "Every trainer's `input`, concatenated in rank order (flattened).");
}

}  // namespace flotilla::python
