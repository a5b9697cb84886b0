// The pieces of the flotilla._core extension module, one per area; each
// Bind* adds its classes and functions to `m` (or a submodule of it).
//
// Conventions for every binding:
// - calls that may block or run for long (executor runs, collectives, PS
//   RPCs, file I/O) release the GIL;
// - C++ errors propagate as flotilla::Error and are translated once, in
//   errors.cc, to the Python classes of flotilla.errors;
// - tensors cross as NumPy arrays: feeds without a copy where the array
//   allows it (tensor.cc), fetches as arrays that own their memory.
#pragma once

#include <pybind11/pybind11.h>

namespace flotilla::python {

namespace py = pybind11;

void BindErrors(py::module_& m);
void BindTensor(py::module_& m);
void BindFramework(py::module_& m);
void BindExecutor(py::module_& m);
void BindLayers(py::module_& m);
void BindOptimizers(py::module_& m);
void BindIo(py::module_& m);
void BindFleet(py::module_& m);

}  // namespace flotilla::python
