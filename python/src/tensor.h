// Tensors across the language boundary.
//
// ToTensor: a NumPy array (or anything np.asarray accepts) as a Tensor. A
// C-contiguous, aligned, writeable array of a Flotilla dtype (float32,
// float64, int32, int64) is wrapped without a copy: the Tensor's buffer
// holds a reference to the array until the Tensor's last copy dies. Other
// arrays are converted once (to `want` when given, else their own dtype).
// Throws InvalidArgument naming `what` for a dtype Flotilla has no kernel
// for. Needs the GIL.
//
// ToNumpy: a new NumPy array owning a copy of the tensor's data (a fetched
// value must outlive the executor's reuse of its buffers).
#pragma once

#include <optional>
#include <string>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "flotilla/core/tensor.h"

namespace flotilla::python {

namespace py = pybind11;

Tensor ToTensor(const py::handle& value, const std::string& what,
                std::optional<DType> want = std::nullopt);
py::array ToNumpy(const Tensor& tensor);
// "float32" → DType::kFloat32; accepts NumPy dtypes and Paddle's names
// ("float32", "int64", "FP32", VarType names). Throws InvalidArgument.
DType ToDType(const py::handle& dtype);
py::dtype NumpyDType(DType dtype);

}  // namespace flotilla::python
