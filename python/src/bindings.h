// The pieces of the flotilla._core extension module, one per area; each
// Bind* adds its classes and functions to `m` (or a submodule of it).
//
// Conventions for every binding:
// - calls that may block or run for long (executor runs, collectives, PS
//   RPCs, file I/O) release the GIL, and those that wait for peers are
//   Interruptible (interrupt.h) so Ctrl-C raises KeyboardInterrupt;
// - C++ errors propagate as flotilla::Error and are translated once, in
//   errors.cc, to the Python classes of flotilla.errors;
// - tensors cross as NumPy arrays: feeds without a copy where the array
//   allows it (tensor.cc), fetches as arrays that own their memory;
// - a Variable handed to Python keeps its Program's Python object alive (the
//   type caster below), as a Paddle Variable keeps its program.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "flotilla/api/optimizer.h"
#include "flotilla/framework/executor.h"
#include "flotilla/framework/program.h"
#include "interrupt.h"

namespace flotilla::python {

namespace py = pybind11;

void BindErrors(py::module_& m);
void BindTensor(py::module_& m);
void BindFramework(py::module_& m);
void BindExecutor(py::module_& m);
void BindLayers(py::module_& m);
void BindOptimizers(py::module_& m);
void BindIo(py::module_& m);
void BindDataset(py::module_& io);  // into the io submodule
void BindFleet(py::module_& m);
// Convolutional layers (into m.layers, and m.functional) and image models
// and data (m.vision): nn_layers.cc, vision.cc.
void BindNnLayers(py::module_& m);
void BindVision(py::module_& m);
// fleet.util's host-value collectives (m.fleet_util): fleet_util.cc.
void BindFleetUtil(py::module_& m);
// Sequence (LoD) layers, into m.layers: sequence_layers.cc.
void BindSequenceLayers(py::module_& m);

// (optimize op types, [(param, grad)]): what Python's minimize() returns.
py::tuple MinimizeResultTuple(const optimizer::MinimizeResult& result);

// Sets `variable`'s reference to the Python object of its Program (the one
// Python owns, or a non-owning view of a program C++ owns). Returns `variable`.
py::handle KeepProgramAlive(py::handle variable, const Variable& v);

// A feed dict as the executor takes it, converted as exe.run converts it
// (lists and scalars take the program's variable's dtype).
FeedMap ToFeedMap(const Program& program, const py::dict& feed);

// Runs the bound call with the GIL released and Ctrl-C raising KeyboardInterrupt.
using ReleaseInterruptible = py::call_guard<Interruptible, py::gil_scoped_release>;

}  // namespace flotilla::python

namespace pybind11::detail {

template <>
class type_caster<flotilla::Variable> : public type_caster_base<flotilla::Variable> {
  using Base = type_caster_base<flotilla::Variable>;

 public:
  static handle cast(const flotilla::Variable& v, return_value_policy policy, handle parent) {
    return flotilla::python::KeepProgramAlive(Base::cast(v, policy, parent), v);
  }
  static handle cast(flotilla::Variable&& v, return_value_policy policy, handle parent) {
    flotilla::Variable copy = v;
    return flotilla::python::KeepProgramAlive(Base::cast(std::move(v), policy, parent), copy);
  }
  static handle cast(const flotilla::Variable* v, return_value_policy policy, handle parent) {
    if (v == nullptr) return none().release();
    return flotilla::python::KeepProgramAlive(Base::cast(v, policy, parent), *v);
  }
};

}  // namespace pybind11::detail
