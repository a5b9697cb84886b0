// fleet.util's collectives on host values (flotilla._core.fleet_util):
// Paddle 2.x's `fleet.util.all_reduce(np_array, mode)` and
// `all_gather(value)` between the trainers of a collective job, over the
// fleet's process group (communicator 0, queued behind any gradient
// all-reduce already issued). One worker: the value itself. Blocks, without
// the GIL and interruptible, until every trainer has made the same call.
// The workers of a parameter-server job share no group: an error, not
// their own value.
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

// The fleet's process group; nullptr in a one-worker job. Throws
// Unimplemented for the workers of a parameter-server job, which share none.
std::shared_ptr<comm::ProcessGroup> WorkersGroup(const char* what) {
  const fleet::Fleet& f = fleet::default_fleet();
  auto group = f.process_group();
  if (group != nullptr || !f.initialized() || f.role().worker_num <= 1) return group;
  FLOTILLA_THROW(Unimplemented, "fleet.util.", what, " between the ", f.role().worker_num,
                 " workers of a parameter-server job: they share no process group in Flotilla; nearest: "
                 "a collective job (fleet.init(is_collective=True)), or a collective role maker with a store "
                 "(UserDefinedRoleMaker(is_collective=True, path=...))");
}

// A contiguous copy of `value` (an array, list or scalar) in its own dtype.
Tensor OwnedCopy(const py::handle& value, const char* what) {
  return ToTensor(value, what).Clone();
}

py::array AllReduce(const py::handle& value, const std::string& mode) {
  Tensor t = OwnedCopy(value, "fleet.util.all_reduce input");
  const comm::ReduceOp op = ToReduceOp(mode);
  if (auto group = WorkersGroup("all_reduce")) {
    Interruptible interruptible;
    py::gil_scoped_release release;
    group->allreduce(t, op);
  }
  return AdoptAsNumpy(std::move(t));
}

py::array AllGather(const py::handle& value) {
  Tensor t = OwnedCopy(value, "fleet.util.all_gather input");
  auto group = WorkersGroup("all_gather");
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
