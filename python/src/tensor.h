// Tensors across the language boundary.
//
// ToTensor: a value as a Tensor. A _core.Tensor is shared. A C-contiguous,
// aligned, native-endian NumPy array of a Flotilla dtype (float32, float64,
// int32, int64) is wrapped without a copy: the Tensor's buffer holds a
// reference to the array until the Tensor's last copy dies, and Flotilla
// never writes into it (see Buffer). Other arrays are copied once into a
// contiguous array of their dtype; other values (lists, scalars) go through
// np.asarray. With `convert_to`, anything of another dtype is converted to
// it (Paddle's DataFeeder does that); without it an array keeps its dtype, and
// a wrong one is reported by the executor, naming the variable. Throws
// InvalidArgument naming `what` for a dtype Flotilla has no kernels for.
// Needs the GIL.
//
// ToNumpy: a new NumPy array holding a copy of the tensor's data.
// AdoptAsNumpy: a NumPy array over the tensor's buffer, which the array then
// keeps alive — for tensors nobody else holds (an executor's fetches, which
// are fresh copies), so no second copy is made. Needs the GIL.
//
// DrainReleases: arrays whose last Tensor died on a thread without the GIL
// (an executor run) are released here, with the GIL; the bindings call it
// after every such run.
#pragma once

#include <optional>
#include <string>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "flotilla/core/tensor.h"

namespace flotilla::python {

namespace py = pybind11;

Tensor ToTensor(const py::handle& value, const std::string& what,
                std::optional<DType> convert_to = std::nullopt);
py::array ToNumpy(const Tensor& tensor);
py::array AdoptAsNumpy(Tensor tensor);
void DrainReleases();
// "float32" → DType::kFloat32; accepts NumPy dtypes and Paddle's names
// ("float32", "int64", "FP32", "VarType.FP32"). Throws InvalidArgument.
DType ToDType(const py::handle& dtype);
py::dtype NumpyDType(DType dtype);

}  // namespace flotilla::python
